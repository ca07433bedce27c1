// medseg-app: itk
// medseg_plan_and_preprocess: nnUNetv2_plan_and_preprocess's job, in three steps per dataset:
//   1. fingerprint (kept when dataset_fingerprint.json exists, unless --clean),
//   2. planning (writes <plans_name>.json and copies dataset.json),
//   3. preprocessing (skipped with --no_pp).
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/log.h"
#include "core/paths.h"
#include "fingerprint/extractor.h"
#include "io/dataset.h"
#include "planning/planner.h"
#include "planning/planner_specs.h"
#include "planning/plans_file.h"
#include "preprocessing/dataset_preprocessing.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

struct Args {
  std::vector<std::string> ids;
  planning::PlannerOptions planner;
  double gpu_target = 0;
  int fingerprint_threads = 8;
  bool verify = false, no_pp = false, clean = false, no_progress = false;
  preprocessing::DatasetPreprocessRequest pp;
};

void fingerprint_step(const io::DatasetInfo& info, const std::string& path, const Args& a) {
  if (a.verify) {
    const auto problems = io::verify_dataset(info, a.fingerprint_threads);
    for (const auto& p : problems) spdlog::error("{}", p);
    MEDSEG_CHECK(problems.empty(), info.folder, ": dataset integrity check found ", problems.size(),
                 " problem(s), first: ", problems.front());
    spdlog::info("dataset integrity check passed");
  }
  if (fs::exists(path) && !a.clean) {
    spdlog::info("fingerprint exists, kept (use --clean to recompute): {}", path);
    return;
  }
  fingerprint::ExtractOptions o;
  o.threads = a.fingerprint_threads;
  o.progress = !a.no_progress;
  o.label_values = info.label_values();
  o.reorient_to_ras = info.reorient_to_ras;
  const auto cases = io::list_training_cases(info);
  spdlog::info("{}: fingerprint of {} case(s), {} thread(s)", info.name, cases.size(), o.threads);
  fingerprint::save_fingerprint(path, fingerprint::extract_fingerprint(cases, info.num_channels(), o));
}

std::string plan_step(const std::string& raw_folder, const std::string& pp_folder, const std::string& name,
                      planning::PlannerOptions o) {
  o.dataset_name = name;
  const std::string plans_name =
      o.plans_name.empty() ? planning::find_planner_preset(o.planner, o.presets_dir).default_plans_name : o.plans_name;
  const auto ds = planning::load_dataset_json((fs::path(raw_folder) / "dataset.json").string());
  const auto fp = planning::load_fingerprint((fs::path(pp_folder) / "dataset_fingerprint.json").string());
  const std::string out = (fs::path(pp_folder) / (plans_name + ".json")).string();
  spdlog::info("planning {} with {}", name, o.planner);
  planning::save_plans_file(out, planning::plan_experiment(fp, ds, o));
  preprocessing::copy_dataset_json(raw_folder, pp_folder);
  std::printf("%s: plans written to %s\n", name.c_str(), out.c_str());
  return plans_name;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fingerprint, plan and preprocess (nnU-Net v2's nnUNetv2_plan_and_preprocess)",
               "medseg_plan_and_preprocess"};
  Args a;
  a.fingerprint_threads = std::min(8, cli::default_threads());
  app.add_option("-d", a.ids, "Dataset id(s) or name(s) under $MEDSEG_RAW")->required();
  app.add_option("--pl", a.planner.planner,
                 "Planner preset: a name (ExperimentPlanner, nnUNetPlannerResEncM/L/XL, nnUNetPlanner_torchres, ...) "
                 "or a preset .json file "
                 "(docs/planner_presets.md)")
      ->capture_default_str();
  app.add_option("--presets", a.planner.presets_dir,
                 "Folder searched first for -pl NAME.json (then $MEDSEG_PLANS_PRESETS, then plans/)");
  app.add_option("--gpu_memory_target", a.gpu_target, "GPU memory target in GB (default: the planner's)");
  app.add_option("--overwrite_plans_name", a.planner.plans_name, "Plans name (default: the planner's)");
  app.add_option("--overwrite_target_spacing", a.planner.overwrite_target_spacing,
                 "3d_fullres target spacing, 3 values in array order")
      ->expected(3);
  app.add_option("--preprocessor_name", a.planner.preprocessor_name, "Preprocessor written into the plans")
      ->capture_default_str();
  app.add_option("-c", a.pp.configurations, "Configurations to preprocess (default: 2d 3d_fullres 3d_lowres)");
  app.add_option("--np", a.pp.threads, "Preprocessing: cases in flight, one value or one per configuration");
  app.add_option("--npfp", a.fingerprint_threads, "Fingerprint: cases analysed in parallel")->capture_default_str();
  app.add_flag("--verify_dataset_integrity", a.verify, "Check the dataset first");
  app.add_flag("--no_pp", a.no_pp, "Stop after planning");
  app.add_flag("--clean", a.clean, "Recompute the fingerprint even if it exists");
  app.add_flag("--no-progress,--no_pbar", a.no_progress, "No progress bars");
  return cli::run(argc, argv, app, [&] {
    if (a.gpu_target < 0) throw Error("-gpu_memory_target must be positive");
    if (a.gpu_target > 0) a.planner.gpu_memory_target_gb = a.gpu_target;
    if (a.fingerprint_threads < 1) throw Error("-npfp must be at least 1");
    planning::find_planner_preset(a.planner.planner, a.planner.presets_dir);  // fail early on a bad preset
    const std::string raw_root = root_folder(Root::Raw), pp_root = root_folder(Root::Preprocessed);
    for (const std::string& id : a.ids) {
      const std::string name = find_dataset_name(raw_root, id);
      const std::string raw = (fs::path(raw_root) / name).string(), pp = (fs::path(pp_root) / name).string();
      const io::DatasetInfo info = io::load_dataset_info(raw);
      fingerprint_step(info, (fs::path(pp) / "dataset_fingerprint.json").string(), a);
      const std::string plans_name = plan_step(raw, pp, name, a.planner);
      if (a.no_pp) continue;
      a.pp.raw_dataset_folder = raw;
      a.pp.preprocessed_dataset_folder = pp;
      a.pp.plans_name = plans_name;
      a.pp.progress = !a.no_progress;
      a.pp.default_threads_cap = cli::default_threads();
      for (const auto& r : preprocessing::preprocess_dataset(a.pp))
        std::printf("%s %s: %d case(s) in %.1f s (%.1f cases/min, %d thread(s)) -> %s\n", name.c_str(),
                    r.configuration.c_str(), r.cases, r.seconds, r.seconds > 0 ? 60.0 * r.cases / r.seconds : 0.0,
                    r.threads, r.output_folder.c_str());
    }
    return 0;
  });
}
