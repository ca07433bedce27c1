#include "sharing/nnunet_import.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <unordered_map>

#include "checkpoint/checkpoint.h"
#include "core/digest.h"
#include "core/error.h"
#include "core/file_digest.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/output_folder.h"
#include "core/path_component.h"
#include "core/path_overlap.h"
#include "io/dataset.h"
#include "plans/plans.h"
#include "sharing/nnunet_weights.h"
#include "sharing/torch_pickle.h"
#include "training/trainer_config.h"

namespace fs = std::filesystem;

namespace medseg::sharing {
namespace {

// The folds of the fold_K folders holding the checkpoint, numbers first in numeric order, then "all". A
// fold_K folder whose K nnU-Net would not take (int(K) or "all") is refused, naming it.
std::vector<std::string> folds_with(const std::string& folder, const std::string& chk) {
  std::vector<std::string> out;
  MEDSEG_CHECK_FILE(fs::is_directory(folder), folder, "nnU-Net model folder not found");
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("fold_", 0) != 0 || !fs::is_regular_file(e.path() / (chk + ".pth"))) continue;
    try {
      parse_fold(n.substr(5));
      out.push_back(n.substr(5));
    } catch (const Error& err) {
      throw FileError(e.path().string(), std::string("is not a fold folder (") + err.what() + ")");
    }
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return a == "all" || b == "all" ? b == "all" && a != "all" : std::stol(a) < std::stol(b);
  });
  MEDSEG_CHECK_FILE(!out.empty(), folder, "holds no fold_K/", chk, ".pth");
  return out;
}

// The checkpoint file's content hash (core/file_digest.h), to tell later which file a model came from.
std::string content_hash_hex(const std::string& path) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(file_digest(path).hash));
  return buf;
}

std::string text_of(const PickleValue* v, const std::string& fallback) {
  return v && v->kind == PickleValue::Kind::String ? v->s : fallback;
}

// The checkpoint's trainer_name (else the folder's), checked as a name: it becomes part of paths and JSON.
std::string trainer_name(const PickleValue* v, const std::string& folder_name, const std::string& pth) {
  const std::string name = text_of(v, folder_name.substr(0, folder_name.find("__")));
  check_path_component(name, "trainer_name", pth);
  MEDSEG_CHECK_FILE(
      !std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }), pth,
      "trainer_name '", printable(name), "' is not a valid name (Python class names are ASCII)");
  return name;
}

// A checkpoint's inference_allowed_mirroring_axes: null (None, or absent: every axis) or checked axes.
json mirror_axes(const PickleValue* axes, int dim, const std::string& pth) {
  if (!axes || axes->kind == PickleValue::Kind::None) return nullptr;
  MEDSEG_CHECK_FILE(axes->kind == PickleValue::Kind::Tuple || axes->kind == PickleValue::Kind::List, pth,
                    "inference_allowed_mirroring_axes is neither a tuple nor None");
  if (axes->items.empty()) return nullptr;
  std::vector<int64_t> values;
  std::vector<bool> integral;
  for (const auto& a : axes->items) {
    values.push_back(a->i);
    integral.push_back(a->kind == PickleValue::Kind::Int);
  }
  return checked_mirror_axes(values, integral, dim, pth);
}

// The network a trainer builds in place of the plans' (training::TrainerConfig::architecture): null for
// nnUNetTrainer, the variants that keep the plans' network, and trainers medseg does not know (their weights
// are checked against the plans' network). `refused` gets why medseg refuses a trainer it knows (a V2/V3
// Primus, a focal loss), for the message when the weights then do not fit the plans' network.
json trainer_architecture(const std::string& trainer, std::string& refused) {
  try {
    return training::find_trainer_config(trainer).architecture;
  } catch (const Error& e) {
    if (std::string(e.what()).find("not found") == std::string::npos) refused = e.what();
    return nullptr;
  }
}

}  // namespace

NnunetImportResult import_nnunet(const NnunetImportOptions& o) {
  check_output_apart(o.output, o.nnunet_folder, "nnU-Net model folder being imported");
  StagedFolder out(o.output);
  NnunetImportResult r = import_nnunet_into(o, out.path());
  out.commit(o.overwrite);
  return r;
}

namespace {

// The nnU-Net model folder's plans and dataset.json, read and checked once for every fold.
struct ImportSource {
  fs::path src;
  std::string chk;  // the checkpoint's name without .pth
  json plans;
  ordered_json dataset;
  planning::Plans parsed;
  io::DatasetInfo info;
  std::string folder_name, parts;  // the folder's name, and its "__" parts (Trainer__Plans__configuration)
};

ImportSource read_import_source(const NnunetImportOptions& o) {
  ImportSource s;
  s.chk = o.checkpoint.size() > 4 && o.checkpoint.compare(o.checkpoint.size() - 4, 4, ".pth") == 0
              ? o.checkpoint.substr(0, o.checkpoint.size() - 4)
              : o.checkpoint;
  check_path_component(s.chk, "checkpoint name (--chk)");
  s.src = o.nnunet_folder;
  for (const char* f : {"plans.json", "dataset.json"})
    MEDSEG_CHECK_FILE(fs::is_regular_file(s.src / f), (s.src / f).string(),
                      "not found (an nnU-Net model folder holds it)");
  s.plans = read_json((s.src / "plans.json").string());
  s.dataset = read_ordered_json((s.src / "dataset.json").string());
  // The typed readers refuse what no network can be built from (a list for plans, 1e6 stages, negative
  // features), naming the file and key, before any checkpoint is read.
  s.parsed = planning::plans_from_json(s.plans, (s.src / "plans.json").string());
  s.info = io::dataset_info_from_json(s.dataset, (s.src / "dataset.json").string());
  s.folder_name = fs::absolute(s.src).lexically_normal().filename().string();
  s.parts = s.folder_name.find("__") == std::string::npos ? std::string()
                                                          : s.folder_name.substr(s.folder_name.rfind("__") + 2);
  return s;
}

// The plans a fold's network is built from: the folder's, or, for a trainer that builds its own network (nnU-Net's
// Primus trainers), the folder's with that network in the configuration, as medseg's trainer writes it
// (training/run_folder.h). `refused` says why medseg does not build a trainer's network, when it does not.
struct FoldPlans {
  json plans;
  planning::Plans parsed;
};

FoldPlans fold_plans(const ImportSource& s, const std::string& trainer, const std::string& configuration,
                     const std::string& pth, std::string& refused) {
  const json architecture = trainer_architecture(trainer, refused);
  if (architecture.is_null()) return {s.plans, s.parsed};
  FoldPlans own{s.plans, {}};
  own.plans["configurations"][configuration]["architecture"] = architecture;
  try {
    own.parsed = planning::plans_from_json(own.plans, (s.src / "plans.json").string());
  } catch (const Error& e) {
    throw FileError(pth, "trainer '" + trainer + "' builds its own network, which configuration '" + configuration +
                             "' does not fit: " + e.what());
  }
  return own;
}

// What the converted checkpoint records of its origin, beside what the network needs.
json fold_extra(const ImportSource& s, const PickleDocument& ck, const std::string& fold, const std::string& trainer,
                const std::string& configuration, const ImportedShape& shape, const json& mirror,
                const NnunetImportResult& r, int64_t epoch) {
  const std::string pth = (s.src / ("fold_" + fold) / (s.chk + ".pth")).string();
  json extra = {{"configuration", configuration},
                {"in_channels", shape.in_channels},
                {"inference_allowed_mirroring_axes", mirror},
                {"trainer_name", trainer},
                {"imported_from",
                 {{"tool", "medseg_import_nnunet"},
                  {"folder", fs::absolute(s.src).lexically_normal().string()},
                  {"checkpoint", ("fold_" + fold + "/" + s.chk + ".pth")},
                  {"content_hash", content_hash_hex(pth)},
                  {"nnunet_epoch", epoch},
                  {"aliases_dropped", r.aliases_dropped}}}};
  extra["num_classes"] = shape.num_classes;
  // Absent (a checkpoint that does not say) is nnU-Net's default, every axis; null is None, no mirroring.
  if (!ck->get("inference_allowed_mirroring_axes")) extra.erase("inference_allowed_mirroring_axes");
  return extra;
}

// One fold's checkpoint converted into `folder`/fold_K; returns the plans its network was checked against.
json import_fold(const ImportSource& s, const std::string& fold, const std::string& folder, NnunetImportResult& r) {
  const fs::path pth = s.src / ("fold_" + fold) / (s.chk + ".pth");
  MEDSEG_CHECK_FILE(fs::is_regular_file(pth), pth.string(), "not found");
  const PickleDocument ck = read_torch_file(pth.string());
  const PickleValue* weights = ck->get("network_weights");
  MEDSEG_CHECK_FILE(weights && weights->kind == PickleValue::Kind::Dict, pth.string(),
                    "no 'network_weights' (not an nnU-Net v2 checkpoint?)");
  checkpoint::Checkpoint m;
  m.weights = weights_without_aliases(*weights, pth.string(), &r.aliases_dropped);
  r.tensors = static_cast<int64_t>(m.weights.size());
  m.weights_only = true;
  m.dataset = s.dataset;
  const PickleValue* init = ck->get("init_args");
  const std::string configuration = text_of(init ? init->get("configuration") : nullptr, s.parts);
  const std::string trainer = trainer_name(ck->get("trainer_name"), s.folder_name, pth.string());
  const ImportedShape shape = imported_shape(s.parsed, s.info, configuration, pth.string());
  std::string refused;
  FoldPlans own = fold_plans(s, trainer, configuration, pth.string(), refused);
  m.plans = std::move(own.plans);
  const planning::ConfigurationPlan& cfg = own.parsed.configuration(configuration);
  try {
    check_weights_fit(m.weights, cfg, shape, pth.string());
  } catch (const FileError& e) {
    if (refused.empty()) throw;
    throw Error(std::string(e.what()) + " (the trainer's own network is not built by medseg: " + refused + ")");
  }
  const json mirror = mirror_axes(ck->get("inference_allowed_mirroring_axes"), cfg.dim(), pth.string());
  const PickleValue* epoch = ck->get("current_epoch");
  m.epoch = epoch && epoch->kind == PickleValue::Kind::Int ? epoch->i : 0;
  m.extra = fold_extra(s, ck, fold, trainer, configuration, shape, mirror, r, m.epoch);
  const fs::path dir = fs::path(folder) / ("fold_" + fold);
  fs::create_directories(dir);
  checkpoint::save_checkpoint((dir / (s.chk + ".ckpt")).string(), m);
  return m.plans;
}

}  // namespace

NnunetImportResult import_nnunet_into(const NnunetImportOptions& o, const std::string& folder) {
  const ImportSource s = read_import_source(o);
  NnunetImportResult r;
  json written_plans = s.plans;  // what the medseg model folder's plans.json holds
  r.folds = o.folds.empty() ? folds_with(o.nnunet_folder, s.chk) : parse_folds(o.folds, "-f");
  for (const std::string& fold : r.folds)
    if (json p = import_fold(s, fold, folder, r); p != s.plans) written_plans = std::move(p);  // a trainer's network
  write_json((fs::path(folder) / "plans.json").string(), written_plans);
  for (const char* f : {"dataset.json", "dataset_fingerprint.json"})
    if (fs::is_regular_file(s.src / f)) fs::copy_file(s.src / f, fs::path(folder) / f);
  return r;
}

}  // namespace medseg::sharing
