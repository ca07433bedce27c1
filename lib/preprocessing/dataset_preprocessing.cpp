#include "preprocessing/dataset_preprocessing.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/json_io.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core/log.h"
#include "io/dataset.h"
#include "plans/plans.h"
#include "preprocessing/data_record.h"
#include "preprocessing/preprocessor.h"

namespace fs = std::filesystem;

namespace medseg::preprocessing {

namespace {

int machine_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

std::vector<int> threads_per_configuration(const DatasetPreprocessRequest& r, const std::vector<std::string>& configs) {
  std::vector<int> t;
  if (r.threads.empty()) {
    const int cap = r.default_threads_cap > 0 ? r.default_threads_cap : machine_cores();
    for (const auto& c : configs) t.push_back(std::min(default_preprocess_threads(c), cap));
  } else if (r.threads.size() == 1) {
    t.assign(configs.size(), r.threads[0]);
  } else if (r.threads.size() == configs.size()) {
    t = r.threads;
  } else {
    throw Error(concat("-np needs one value or one per configuration (", configs.size(), "), got ", r.threads.size()));
  }
  for (int v : t) MEDSEG_CHECK(v >= 1, "-np values must be at least 1");
  return t;
}

}  // namespace

void copy_dataset_json(const std::string& raw_dataset_folder, const std::string& preprocessed_dataset_folder) {
  const std::string src = (fs::path(raw_dataset_folder) / "dataset.json").string();
  const std::string dst = (fs::path(preprocessed_dataset_folder) / "dataset.json").string();
  const std::string bytes = read_file(src);
  if (fs::exists(dst) && read_file(dst) == bytes) return;
  write_file_atomic(dst, bytes);
}

std::vector<ConfigurationReport> preprocess_dataset(const DatasetPreprocessRequest& r) {
  check_path_component(r.plans_name, "plans name");
  const std::string plans_path = (fs::path(r.preprocessed_dataset_folder) / (r.plans_name + ".json")).string();
  MEDSEG_CHECK_FILE(fs::exists(plans_path), plans_path,
                    "plans file not found; run medseg_plan_experiment (or medseg_plan_and_preprocess) first");
  const planning::Plans plans = planning::load_plans(plans_path);
  const io::DatasetInfo info = io::load_dataset_info(r.raw_dataset_folder);

  const bool defaults = r.configurations.empty();
  const std::vector<std::string> configs =
      defaults ? std::vector<std::string>{"2d", "3d_fullres", "3d_lowres"} : r.configurations;
  const std::vector<int> threads = threads_per_configuration(r, configs);  // zipped with configs, as nnU-Net
  if (!defaults)
    for (const auto& c : configs) plans.configuration(c);  // unknown names fail before any work

  const std::vector<io::CaseFiles> cases = io::list_training_cases(info);
  // Another plans' data is refused before any configuration is written (data_record.h).
  for (const auto& c : configs)
    if (plans.has_configuration(c)) {
      const PreprocessPlan plan = make_preprocess_plan(plans, c, info);
      check_data_record((fs::path(r.preprocessed_dataset_folder) / plan.data_identifier).string(), plan);
    }
  copy_dataset_json(r.raw_dataset_folder, r.preprocessed_dataset_folder);
  std::vector<ConfigurationReport> reports;
  std::set<std::string> done;  // 3d_cascade_fullres shares 3d_fullres's data identifier
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (!plans.has_configuration(configs[i])) {
      spdlog::info("configuration {} is not in {}, skipped", configs[i], plans_path);
      continue;
    }
    const PreprocessPlan plan = make_preprocess_plan(plans, configs[i], info);
    if (!done.insert(plan.data_identifier).second) {
      spdlog::info("configuration {}: {} was already written in this run, skipped", configs[i], plan.data_identifier);
      continue;
    }
    ConfigurationReport rep;
    rep.configuration = configs[i];
    rep.output_folder = (fs::path(r.preprocessed_dataset_folder) / plan.data_identifier).string();
    rep.cases = static_cast<int>(cases.size());
    rep.threads = std::max(1, std::min(threads[i], rep.cases));
    spdlog::info("preprocessing {} ({} cases, {} thread(s)) into {}", configs[i], rep.cases, rep.threads,
                 rep.output_folder);
    const auto t0 = std::chrono::steady_clock::now();
    preprocess_cases(cases, plan, rep.output_folder, {rep.threads, r.progress});
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    reports.push_back(rep);
  }
  copy_gt_segmentations(cases, info.file_ending,
                        (fs::path(r.preprocessed_dataset_folder) / "gt_segmentations").string());
  return reports;
}

}  // namespace medseg::preprocessing
