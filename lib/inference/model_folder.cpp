#include "inference/model_folder.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <type_traits>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/json_object_reader.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/log.h"
#include "core/path_component.h"
#include "core/paths.h"

namespace fs = std::filesystem;

namespace medseg::inference {

std::string model_folder_path(const std::string& results_root, const std::string& dataset, const std::string& trainer,
                              const std::string& plans, const std::string& configuration) {
  check_path_component(trainer, "trainer name (--tr)");
  check_path_component(plans, "plans name (-p)");
  check_path_component(configuration, "configuration (-c)");
  const std::string name = find_dataset_name(results_root, dataset);
  return (fs::path(results_root) / name / (trainer + "__" + plans + "__" + configuration)).string();
}

std::vector<std::string> available_folds(const std::string& folder) { return numbered_folds(folder); }

std::string checkpoint_file_name(const std::string& chk) {
  check_path_component(chk, "checkpoint name (-chk)");
  std::string stem = chk;
  for (const char* ext : {".ckpt", ".pth"}) {
    const std::string e = ext;
    if (stem.size() > e.size() && stem.compare(stem.size() - e.size(), e.size(), e) == 0)
      stem = stem.substr(0, stem.size() - e.size());
  }
  return stem + ".ckpt";
}

namespace {

// The folder's JSON file if present, else the checkpoint's copy; throws when neither exists.
template <class J>
J json_file_or_copy(const fs::path& file, const J& copy, const std::string& ckpt) {
  if (fs::exists(file)) {
    if constexpr (std::is_same_v<J, ordered_json>)
      return read_ordered_json(file.string());
    else
      return read_json(file.string());
  }
  if (copy.is_object() && !copy.empty()) return copy;
  throw FileError(file.string(), "not found, and checkpoint " + ckpt + " holds no copy of it");
}

// "<Trainer>__<Plans>__<Configuration>" -> Configuration ("" when the name does not follow it).
std::string configuration_from_folder_name(const std::string& folder) {
  const std::string n = fs::path(folder).lexically_normal().filename().string();
  const auto p = n.rfind("__");
  return p == std::string::npos ? "" : n.substr(p + 2);
}

void check_same(const std::string& what, const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  MEDSEG_CHECK_FILE(a == b, path, what, " ", b.dump(), " differs from the first fold's ", a.dump());
}

// Each fold's checkpoint; the first fold's also gives the plans and dataset.json when the folder has no copies,
// and the others must agree with it. Returns the first fold's `extra`.
nlohmann::json load_folds(ModelFolder& m, const std::vector<std::string>& folds, const std::string& chk) {
  const std::string file = checkpoint_file_name(chk);
  nlohmann::json first_extra;
  for (const std::string& f : folds) {
    const fs::path path = fs::path(m.folder) / ("fold_" + f) / file;
    if (!fs::exists(path)) {
      MEDSEG_CHECK_FILE(fs::is_directory(path.parent_path()), path.parent_path().string(), "fold folder not found");
      throw FileError(path.string(), "checkpoint not found (-chk " + chk + ")");
    }
    checkpoint::Checkpoint ck = checkpoint::load_checkpoint(path.string());
    const nlohmann::json& x = ck.extra;
    if (m.folds.empty()) {
      first_extra = x;
      m.plans_json = json_file_or_copy(fs::path(m.folder) / "plans.json", ck.plans, path.string());
      m.dataset_json = json_file_or_copy(fs::path(m.folder) / "dataset.json", ck.dataset, path.string());
    } else {
      for (const char* k : {"configuration", "in_channels", "num_classes"})
        check_same(k, first_extra.value(k, nlohmann::json()), x.value(k, nlohmann::json()), path.string());
    }
    m.folds.push_back({f, path.string(), std::move(ck.weights)});
  }
  return first_extra;
}

// The network's input and output counts the checkpoint records, checked against dataset.json (and, for a cascade
// stage, the previous stage's one channel per foreground label).
void read_channels(ModelFolder& m, const nlohmann::json& extra, const planning::ConfigurationPlan& cfg,
                   const std::string& src) {
  const int64_t expected_in =
      m.dataset.num_channels() +
      (cfg.previous_stage.empty() ? 0 : static_cast<int64_t>(io::foreground_labels(m.dataset.labels).size()));
  m.in_channels = extra.value("in_channels", expected_in);
  m.num_classes = extra.value("num_classes", io::network_outputs(m.dataset));
  MEDSEG_CHECK_FILE(
      m.in_channels == expected_in, src, "was trained with ", m.in_channels,
      " input channel(s) but dataset.json names ", m.dataset.num_channels(),
      cfg.previous_stage.empty()
          ? std::string()
          : concat(" and the cascade adds ", expected_in - m.dataset.num_channels(), " (one per foreground label)"));
  MEDSEG_CHECK_FILE(m.num_classes == io::network_outputs(m.dataset), src, "has ", m.num_classes,
                    " outputs but dataset.json's labels need ", io::network_outputs(m.dataset));
}

// The test-time mirroring axes. null is nnU-Net's None (nnUNetTrainerNoMirroring & co.): no mirroring. Absent (a
// checkpoint that does not say): every axis, nnU-Net's default.
void read_mirror_axes(ModelFolder& m, const nlohmann::json& extra, int64_t dim, const std::string& src) {
  if (extra.contains("inference_allowed_mirroring_axes")) {
    const auto& axes = extra.at("inference_allowed_mirroring_axes");
    if (!axes.is_null())
      m.mirror_axes = json_as<std::vector<int64_t>>(axes, "extra.inference_allowed_mirroring_axes", src);
  } else {
    for (int64_t a = 0; a < dim; ++a) m.mirror_axes.push_back(a);
  }
  std::set<int64_t> seen;  // 26 zeros would mirror 2^26 times
  for (int64_t a : m.mirror_axes)
    MEDSEG_CHECK_FILE(a >= 0 && a < dim && seen.insert(a).second, src, "mirroring axis ", a,
                      seen.count(a) ? " is repeated" : " out of range", " (the ", dim, "D patch has axes 0..", dim - 1,
                      ")");
}

}  // namespace

ModelFolder load_model_folder(const std::string& folder, const std::vector<std::string>& folds_in,
                              const std::string& chk) {
  MEDSEG_CHECK_FILE(fs::is_directory(folder), folder, "model folder not found");
  // Numbers or "all", never paths, each once (a repeated fold would count double in the ensemble).
  std::vector<std::string> folds = parse_folds(folds_in, "-f");
  if (folds.empty()) folds = available_folds(folder);
  MEDSEG_CHECK_FILE(!folds.empty(), folder, "no fold_K folders (train a fold first, or pass -f all)");
  ModelFolder m;
  m.folder = folder;
  const nlohmann::json first_extra = load_folds(m, folds, chk);
  const std::string src = m.folds[0].path;
  m.configuration = first_extra.value("configuration", configuration_from_folder_name(folder));
  MEDSEG_CHECK_FILE(!m.configuration.empty(), src, "names no configuration (extra.configuration)");
  check_path_component(m.configuration, "extra.configuration", src);
  m.trainer_name = first_extra.value("trainer_name", std::string());
  m.imported_from = first_extra.value("imported_from", nlohmann::json());
  const fs::path plans_file = fs::path(folder) / "plans.json";
  m.plans =
      planning::plans_from_json(m.plans_json, fs::exists(plans_file) ? plans_file.string() : src + " (plans copy)");
  m.dataset = io::dataset_info_from_json(m.dataset_json, (fs::path(folder) / "dataset.json").string());
  m.dataset.folder = folder;
  m.dataset.name = fs::path(folder).lexically_normal().parent_path().filename().string();
  const planning::ConfigurationPlan& cfg = m.plans.configuration(m.configuration);
  read_channels(m, first_extra, cfg, src);
  read_mirror_axes(m, first_extra, cfg.dim(), src);
  spdlog::info("model {}: configuration {}, fold(s) {}, {} -> {} channels, mirroring {}", folder, m.configuration,
               nlohmann::json(folds).dump(), m.in_channels, m.num_classes, nlohmann::json(m.mirror_axes).dump());
  return m;
}

}  // namespace medseg::inference
