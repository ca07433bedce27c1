// medseg_plan_experiment: nnUNetv2_plan_experiment's job. Reads dataset_fingerprint.json and
// dataset.json, writes plans.json in nnU-Net v2's schema (docs/plans.md).
//   nnU-Net style: -d ID -pl PLANNER [-gpu_memory_target GB] [-overwrite_plans_name NAME]
//                  [-overwrite_target_spacing A B C]
//   file style:    --fingerprint F --dataset-json D -pl PLANNER -o plans.json
// PLANNER is a planner preset (plans/<PLANNER>.json, docs/planner_presets.md) or a preset file.
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/log.h"
#include "core/path_overlap.h"
#include "core/paths.h"
#include "core/strings.h"
#include "planning/planner.h"
#include "planning/planner_specs.h"
#include "planning/plans_file.h"

namespace fs = std::filesystem;
using namespace medseg;
using namespace medseg::planning;

namespace {

std::string join_ints(const ordered_json& a, const char* sep = "x") {
  return join(a.get<std::vector<long long>>(), sep);
}

std::string join_doubles(const ordered_json& a) {
  std::string s;
  char buf[32];
  for (const auto& v : a) {
    std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
    s += (s.empty() ? "" : "x") + std::string(buf);
  }
  return s;
}

void print_summary(const ordered_json& plans, const std::string& path) {
  std::printf("%s (%s, %s)\n", path.c_str(), plans["plans_name"].get<std::string>().c_str(),
              plans["experiment_planner_used"].get<std::string>().c_str());
  for (const auto& [name, c] : plans["configurations"].items()) {
    if (!c.contains("patch_size")) {
      std::printf("  %-20s inherits from %s\n", name.c_str(), c.value("inherits_from", std::string("?")).c_str());
      continue;
    }
    std::string gb = "";
    if (c.contains("medseg") && c["medseg"].contains("estimated_peak_bytes")) {
      char buf[48];
      std::snprintf(buf, sizeof buf, ", est. peak %.2f GiB",
                    c["medseg"]["estimated_peak_bytes"].get<double>() / 1073741824.0);
      gb = buf;
    }
    const auto& k = c["architecture"]["arch_kwargs"];
    std::string stages = k.contains("n_stages") ? concat(k["n_stages"].get<int>(), " stages") : "";
    if (k.contains("feature_size"))
      stages =
          concat("SwinUNETR F=", k["feature_size"].get<int>(), k.value("use_checkpoint", false) ? " checkpointed" : "");
    std::printf("  %-20s patch %s, batch %d, spacing %s, %s%s\n", name.c_str(), join_ints(c["patch_size"]).c_str(),
                c["batch_size"].get<int>(), join_doubles(c["spacing"]).c_str(), stages.c_str(), gb.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Plan an experiment (nnU-Net v2's plans.json)", "medseg_plan_experiment"};
  std::string id, fingerprint_path, dataset_json_path, output, dataset_name, memory_model = "proxy", optimizer = "sgd";
  PlannerOptions o;
  double gpu_target = 0;
  bool no_amp = false;
  app.add_option(
      "-d", id,
      "Dataset id or name (dataset.json under $MEDSEG_RAW, fingerprint and plans under $MEDSEG_PREPROCESSED)");
  app.add_option("--pl", o.planner,
                 "Planner preset: a name (ExperimentPlanner, ResEncUNetPlanner, nnUNetPlannerResEncM/L/XL, "
                 "nnUNetPlanner_torchres, nnUNetPlannerResEncL_torchres(_sepz), SwinUNETRPlanner, or NAME.json in "
                 "--presets / $MEDSEG_PLANS_PRESETS) or a preset .json file")
      ->capture_default_str();
  app.add_option("--presets", o.presets_dir,
                 "Folder searched first for -pl NAME.json (then $MEDSEG_PLANS_PRESETS, then plans/)");
  app.add_option("--gpu_memory_target", gpu_target, "GPU memory target in GB (default: the planner's, 8/24/40)");
  app.add_option("--overwrite_plans_name", o.plans_name, "Plans name (file name and data identifiers)");
  app.add_option("--overwrite_target_spacing", o.overwrite_target_spacing,
                 "3d_fullres target spacing, 3 values in the fingerprint's (array) axis order")
      ->expected(3);
  app.add_option("--preprocessor_name", o.preprocessor_name, "Preprocessor written into the plans")
      ->capture_default_str();
  app.add_option("--fingerprint", fingerprint_path,
                 "dataset_fingerprint.json (file style, with --dataset-json and -o)");
  app.add_option("--dataset-json", dataset_json_path, "dataset.json (file style)");
  app.add_option("-o,--output", output, "Output plans.json (file style; -d mode writes <plans_name>.json)");
  app.add_option("--dataset-name", dataset_name,
                 "dataset_name written into the plans (file style; default: the DatasetXXX_Name folder)");
  app.add_option("--memory-model", memory_model,
                 "proxy: nnU-Net's feature-map count (identical plans); bytes: medseg's byte model")
      ->check(CLI::IsMember({"proxy", "bytes"}))
      ->capture_default_str();
  app.add_option("--memory-headroom", o.memory_headroom, "Fraction of the target kept free by the bytes model")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  app.add_option("--optimizer", optimizer, "Optimizer the bytes model assumes (sgd = SGD+momentum, adamw)")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  app.add_flag("--no-amp", no_amp, "Bytes model: fp32 training instead of mixed precision");
  auto* o_model = app.get_option("--memory-model");
  app.add_option("--spatial_parallel", o.spatial_parallel,
                 "Plan for N ranks each holding a slab of every patch (medseg_train --spatial_parallel N); the memory "
                 "target is per rank; implies --memory-model bytes (docs/spatial_parallel.md)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  return cli::run(argc, argv, app, [&] {
    const bool file_style = !fingerprint_path.empty() || !dataset_json_path.empty();
    if (id.empty() == !file_style) throw Error("give either -d DATASET or --fingerprint F --dataset-json D -o OUT");
    const PlannerSpec preset = find_planner_preset(o.planner, o.presets_dir);  // fail early on a bad preset
    if (gpu_target < 0) throw Error("-gpu_memory_target must be positive");
    if (gpu_target > 0) o.gpu_memory_target_gb = gpu_target;
    if (o.spatial_parallel > 1 && o_model->count() == 0) memory_model = "bytes";
    o.memory_model = memory_model == "bytes" ? MemoryModelKind::Bytes : MemoryModelKind::Proxy;
    o.optimizer = optimizer;
    o.amp = !no_amp;
    const std::string plans_name = o.plans_name.empty() ? preset.default_plans_name : o.plans_name;

    std::string preprocessed_dir;
    if (file_style) {
      if (fingerprint_path.empty() || dataset_json_path.empty() || output.empty())
        throw Error("file style needs --fingerprint, --dataset-json and -o");
      o.dataset_name = dataset_name.empty()
                           ? dataset_name_from_paths({dataset_json_path, fingerprint_path}, "Dataset000_unnamed")
                           : dataset_name;
    } else {
      const std::string raw_root = root_folder(Root::Raw);
      o.dataset_name = find_dataset_name(raw_root, id);
      dataset_json_path = (fs::path(raw_root) / o.dataset_name / "dataset.json").string();
      preprocessed_dir = (fs::path(root_folder(Root::Preprocessed)) / o.dataset_name).string();
      fingerprint_path = (fs::path(preprocessed_dir) / "dataset_fingerprint.json").string();
      if (!fs::exists(fingerprint_path))
        throw FileError(fingerprint_path, "fingerprint missing; run medseg_extract_fingerprint -d " + id + " first");
      if (output.empty()) output = (fs::path(preprocessed_dir) / (plans_name + ".json")).string();
    }
    for (const auto& [input, what] : {std::pair{fingerprint_path, "fingerprint"}, {dataset_json_path, "dataset.json"}})
      check_output_apart(output, input, what);  // -o naming an input replaced it with the plans
    const auto ds = load_dataset_json(dataset_json_path);
    const auto fp = load_fingerprint(fingerprint_path);
    spdlog::info("planning {} with {} ({} cases; preset {})", o.dataset_name, preset.name, fp.spacings.size(),
                 preset.source);
    const ordered_json plans = save_plans_file(output, plan_experiment(fp, ds, o));
    if (!preprocessed_dir.empty()) {  // like nnU-Net: later stages read dataset.json from here
      const std::string copy = (fs::path(preprocessed_dir) / "dataset.json").string();
      write_file_atomic(copy, read_file(dataset_json_path));
    }
    print_summary(plans, output);
    return 0;
  });
}
