#include "training/run_folder.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "io/dataset.h"
#include "preprocessing/case_store.h"
#include "training/splits.h"

namespace fs = std::filesystem;

namespace medseg::training {

namespace {

// A cascade stage reads the previous stage's cross-validation predictions of every case (each
// case's from the fold that held it out), resampled to this configuration's grid by that stage's
// final validation. All must exist before training starts.
void resolve_previous_stage(RunInputs& r, const planning::ConfigurationPlan& cfg,
                            const std::vector<io::LabelDef>& labels, const std::string& results_root,
                            const std::string& dataset) {
  const std::string prev_model = (fs::path(results_root) / r.folders.dataset_name /
                                  (r.trainer_name + "__" + r.plans_name + "__" + cfg.previous_stage))
                                     .string();
  r.previous_stage_folder = (fs::path(prev_model) / "predicted_next_stage" / r.configuration).string();
  r.previous_stage_labels = io::foreground_labels(labels);
  MEDSEG_CHECK_FILE(!r.previous_stage_labels.empty(), r.folders.dataset_json_file,
                    "a cascade needs at least one foreground label");
  r.in_channels += static_cast<int64_t>(r.previous_stage_labels.size());
  std::vector<std::string> missing;
  for (const auto* ids : {&r.train_ids, &r.val_ids})
    for (const auto& id : *ids)
      if (!fs::exists(fs::path(r.previous_stage_folder) / (id + ".npy"))) missing.push_back(id);
  if (missing.empty()) return;
  std::string list;
  for (size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", " : "") + missing[i];
  if (missing.size() > 5) list += ", ...";
  throw FileError(r.previous_stage_folder,
                  concat("configuration '", r.configuration, "' is a cascade stage: it needs the '", cfg.previous_stage,
                         "' predictions of every case, ", missing.size(), " missing (", list,
                         "); train every fold of '", cfg.previous_stage, "' first (medseg_train ", dataset, " ",
                         cfg.previous_stage, " FOLD), or rerun its final validation (--val)"));
}

}  // namespace

RunInputs resolve_run(const std::string& dataset, const std::string& configuration, const std::string& fold,
                      const std::string& plans_name, const std::string& trainer_name,
                      const std::string& preprocessed_root, const std::string& results_root) {
  // Each becomes a folder or file name under the roots: checked before anything is read or written.
  check_path_component(configuration, "configuration");
  check_path_component(plans_name, "plans name (-p)");
  check_path_component(trainer_name, "trainer name");
  RunInputs r;
  r.configuration = configuration;
  r.plans_name = plans_name;
  r.trainer_name = trainer_name;
  r.fold = parse_fold(fold);  // before it names a folder
  const std::string pre = root_folder(Root::Preprocessed, preprocessed_root);
  RunFolders& f = r.folders;
  f.dataset_name = find_dataset_name(pre, dataset);
  f.preprocessed_dataset = (fs::path(pre) / f.dataset_name).string();
  f.plans_file = (fs::path(f.preprocessed_dataset) / (plans_name + ".json")).string();
  f.dataset_json_file = (fs::path(f.preprocessed_dataset) / "dataset.json").string();
  f.fingerprint_file = (fs::path(f.preprocessed_dataset) / "dataset_fingerprint.json").string();
  f.splits_file = (fs::path(f.preprocessed_dataset) / "splits_final.json").string();
  MEDSEG_CHECK_FILE(fs::exists(f.plans_file), f.plans_file,
                    "plans not found (run medseg_plan_experiment, or pass -p with the right plans name)");
  r.plans_json = read_json(f.plans_file);
  r.plans = planning::plans_from_json(r.plans_json, f.plans_file);
  const auto& cfg = r.plans.configuration(configuration);
  r.dataset_json = read_ordered_json(f.dataset_json_file);
  if (fs::exists(f.fingerprint_file)) r.fingerprint_json = read_json(f.fingerprint_file);
  r.in_channels =
      static_cast<int64_t>(json_get<ordered_json>(r.dataset_json, "channel_names", f.dataset_json_file).size());
  const auto labels = io::labels_from_json(r.dataset_json, f.dataset_json_file);
  r.num_classes = io::network_outputs(labels);
  r.ignore_label = io::ignore_label(labels);
  r.regions = io::foreground_regions(labels);

  f.data_folder = (fs::path(f.preprocessed_dataset) / cfg.data_identifier).string();
  MEDSEG_CHECK_FILE(fs::is_directory(f.data_folder), f.data_folder,
                    "preprocessed data not found (run medseg_preprocess -d ", dataset, " -c ", configuration, ")");
  const auto ids = preprocessing::list_preprocessed_cases(f.data_folder);
  MEDSEG_CHECK_FILE(!ids.empty(), f.data_folder, "no preprocessed cases");
  const auto splits = load_or_create_splits(f.splits_file, ids);
  const Split s = select_fold(splits, ids, r.fold);
  r.train_ids = s.train;
  r.val_ids = s.val;

  const std::string res = root_folder(Root::Results, results_root);
  f.model_folder =
      (fs::path(res) / f.dataset_name / (trainer_name + "__" + plans_name + "__" + configuration)).string();
  f.fold_folder = (fs::path(f.model_folder) / ("fold_" + r.fold)).string();
  if (!cfg.previous_stage.empty()) resolve_previous_stage(r, cfg, labels, res, dataset);
  for (const auto& next : cfg.next_stage) {
    if (!r.plans.has_configuration(next)) continue;
    const std::string data = (fs::path(f.preprocessed_dataset) / r.plans.configuration(next).data_identifier).string();
    r.next_stages.push_back({next, data, (fs::path(f.model_folder) / "predicted_next_stage" / next).string()});
  }
  return r;
}

planning::ConfigurationPlan read_run_plan(const std::string& dataset, const std::string& configuration,
                                          const std::string& plans_name, const std::string& preprocessed_root) {
  check_path_component(configuration, "configuration");
  check_path_component(plans_name, "plans name (-p)");
  const std::string pre = root_folder(Root::Preprocessed, preprocessed_root);
  const std::string plans_file = (fs::path(pre) / find_dataset_name(pre, dataset) / (plans_name + ".json")).string();
  MEDSEG_CHECK_FILE(fs::exists(plans_file), plans_file,
                    "plans not found (run medseg_plan_experiment, or pass -p with the right plans name)");
  return planning::plans_from_json(read_json(plans_file), plans_file).configuration(configuration);
}

void use_batch_norm(RunInputs& in) {
  const std::string& name = in.configuration;
  json resolved = planning::resolve_configuration(in.plans_json.at("configurations"), name, in.folders.plans_file);
  json& kwargs = resolved["architecture"]["arch_kwargs"];
  MEDSEG_CHECK(kwargs.is_object() && kwargs.contains("norm_op"), "trainer '", in.trainer_name, "': configuration '",
               name, "' has no norm_op in its arch_kwargs (batch norm replaces the norm of nnU-Net's U-Nets only)");
  const std::string dim = in.plans.configuration(name).dim() == 2 ? "2" : "3";
  kwargs["norm_op"] = "torch.nn.modules.batchnorm.BatchNorm" + dim + "d";
  kwargs["norm_op_kwargs"] = json{{"eps", 1e-05}, {"affine", true}};
  in.plans_json["configurations"][name]["architecture"] = resolved["architecture"];
  in.plans = planning::plans_from_json(in.plans_json, in.folders.plans_file);
}

namespace {

// The run's configuration with `key` set to `value` (inherited configurations keep the rest), in in.plans_json and
// in.plans; a configuration that no longer reads is refused naming the trainer and what it `does`.
void set_trainer_key(RunInputs& in, const char* key, const json& value, const std::string& does) {
  json plans = in.plans_json;
  plans["configurations"][in.configuration][key] = value;
  try {
    in.plans = planning::plans_from_json(plans, in.folders.plans_file);
  } catch (const Error& e) {
    throw Error("trainer '" + in.trainer_name + "' " + does + ", which configuration '" + in.configuration +
                "' does not fit: " + e.what());
  }
  in.plans_json = std::move(plans);
}

}  // namespace

void use_trainer_architecture(RunInputs& in, const json& architecture) {
  set_trainer_key(in, "architecture", architecture,
                  "builds its own network (" + architecture.value("network_class_name", std::string("?")) + ")");
}

void use_trainer_batch_size(RunInputs& in, int64_t batch_size) {
  set_trainer_key(in, "batch_size", batch_size, "trains with batch size " + std::to_string(batch_size));
}

std::string previous_stage_hint(const RunInputs& in) {
  return "rerun the final validation of '" + in.plans.configuration(in.configuration).previous_stage +
         "' (--val) to write it again";
}

void refuse_used_fold_folder(const std::string& fold_folder) {
  if (!fs::is_directory(fold_folder)) return;
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(fold_folder)) {
    const std::string n = e.path().filename().string();
    const bool checkpoint = n.rfind("checkpoint_", 0) == 0 && n.size() > 5 && n.compare(n.size() - 5, 5, ".ckpt") == 0;
    if (checkpoint || n == "metrics.jsonl") found.push_back(n);
  }
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  std::string list;
  for (const auto& n : found) list += (list.empty() ? "" : ", ") + n;
  throw FileError(fold_folder, "already holds a training run (" + list +
                                   "); use --c to continue it, or remove the folder to start a new one");
}

}  // namespace medseg::training
