#include "sharing/nnunet_import.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/file_digest.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/output_folder.h"
#include "sharing/torch_pickle.h"

namespace fs = std::filesystem;

namespace medseg::sharing {
namespace {

std::string strip_prefixes(std::string k) {
  for (bool again = true; again;) {
    again = false;
    for (const char* p : {"module.", "_orig_mod."})
      if (k.rfind(p, 0) == 0) {
        k = k.substr(std::string(p).size());
        again = true;
      }
  }
  return k;
}

bool alias_name(const std::string& k) {
  return k.rfind("decoder.encoder.", 0) == 0 || k.find(".all_modules.") != std::string::npos;
}

// network_weights without nnU-Net's aliases; each dropped one must equal a kept tensor (its twin first).
checkpoint::NamedTensors deduplicate(const PickleValue& weights, const std::string& pth, int64_t* dropped) {
  checkpoint::NamedTensors kept;
  std::vector<std::pair<std::string, at::Tensor>> aliases;
  for (const auto& [k, v] : weights.dict) {
    if (k->kind != PickleValue::Kind::String || v->kind != PickleValue::Kind::Tensor)
      throw FileError(pth, "'network_weights' holds something other than named tensors");
    const std::string name = strip_prefixes(k->s);
    (alias_name(name) ? aliases : kept).emplace_back(name, v->tensor.contiguous());
  }
  auto equal = [](const at::Tensor& a, const at::Tensor& b) {
    return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::equal(a, b);
  };
  for (const auto& alias : aliases) {
    // Named references, not a structured binding: C++17 lambdas cannot capture bindings (clang refuses).
    const std::string& name = alias.first;
    const at::Tensor& t = alias.second;
    const std::string twin = name.rfind("decoder.encoder.", 0) == 0 ? name.substr(8) : "";
    const bool ok =
        std::any_of(kept.begin(), kept.end(),
                    [&](const auto& kv) { return (twin.empty() || kv.first == twin) && equal(kv.second, t); }) ||
        std::any_of(kept.begin(), kept.end(), [&](const auto& kv) { return equal(kv.second, t); });
    if (!ok)
      throw FileError(pth, "'" + name + "' looks like an alias but no kept tensor has its values; not converting");
  }
  *dropped = static_cast<int64_t>(aliases.size());
  return kept;
}

std::vector<std::string> folds_with(const std::string& folder, const std::string& chk) {
  std::vector<std::string> out;
  if (!fs::is_directory(folder)) throw FileError(folder, "nnU-Net model folder not found");
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("fold_", 0) == 0 && fs::is_regular_file(e.path() / (chk + ".pth"))) out.push_back(n.substr(5));
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    const bool da = std::all_of(a.begin(), a.end(), ::isdigit), db = std::all_of(b.begin(), b.end(), ::isdigit);
    return da != db ? da : (da ? std::stoi(a) < std::stoi(b) : a < b);
  });
  if (out.empty()) throw FileError(folder, "holds no fold_K/" + chk + ".pth");
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

}  // namespace

NnunetImportResult import_nnunet(const NnunetImportOptions& o) {
  const std::string chk = o.checkpoint.size() > 4 && o.checkpoint.compare(o.checkpoint.size() - 4, 4, ".pth") == 0
                              ? o.checkpoint.substr(0, o.checkpoint.size() - 4)
                              : o.checkpoint;
  const fs::path src(o.nnunet_folder);
  for (const char* f : {"plans.json", "dataset.json"})
    if (!fs::is_regular_file(src / f))
      throw FileError((src / f).string(), "not found (an nnU-Net model folder holds it)");
  const json plans = read_json((src / "plans.json").string());
  const ordered_json dataset = read_ordered_json((src / "dataset.json").string());
  const std::string folder_name = fs::absolute(src).lexically_normal().filename().string();
  const auto parts =
      folder_name.find("__") == std::string::npos ? std::string() : folder_name.substr(folder_name.rfind("__") + 2);
  NnunetImportResult r;
  r.folds = o.folds.empty() ? folds_with(o.nnunet_folder, chk) : o.folds;
  StagedFolder out(o.output);
  for (const std::string& fold : r.folds) {
    const fs::path pth = src / ("fold_" + fold) / (chk + ".pth");
    if (!fs::is_regular_file(pth)) throw FileError(pth.string(), "not found");
    const PickleDocument ck = read_torch_file(pth.string());
    const PickleValue* weights = ck->get("network_weights");
    if (!weights || weights->kind != PickleValue::Kind::Dict)
      throw FileError(pth.string(), "no 'network_weights' (not an nnU-Net v2 checkpoint?)");
    checkpoint::Checkpoint m;
    m.weights = deduplicate(*weights, pth.string(), &r.aliases_dropped);
    r.tensors = static_cast<int64_t>(m.weights.size());
    m.weights_only = true;
    m.plans = plans;
    m.dataset = dataset;
    const PickleValue* init = ck->get("init_args");
    const std::string configuration = text_of(init ? init->get("configuration") : nullptr, parts);
    json mirror = nullptr;
    if (const PickleValue* axes = ck->get("inference_allowed_mirroring_axes"); axes && !axes->items.empty()) {
      mirror = json::array();
      for (const auto& a : axes->items) mirror.push_back(a->i);
    }
    int64_t num_classes = -1, head = -1;
    static const std::regex seg("^decoder\\.seg_layers\\.(\\d+)\\.weight$");
    for (const auto& [name, t] : m.weights) {
      std::smatch sm;
      if (std::regex_match(name, sm, seg) && std::stoll(sm[1].str()) > head) {
        head = std::stoll(sm[1].str());
        num_classes = t.size(0);
      }
    }
    const ordered_json& channels = dataset.contains("channel_names")
                                       ? dataset.at("channel_names")
                                       : dataset.value("modality", ordered_json::object());
    const PickleValue* epoch = ck->get("current_epoch");
    m.epoch = epoch && epoch->kind == PickleValue::Kind::Int ? epoch->i : 0;
    m.extra = {{"configuration", configuration},
               {"in_channels", channels.size()},
               {"inference_allowed_mirroring_axes", mirror},
               {"trainer_name", text_of(ck->get("trainer_name"), folder_name.substr(0, folder_name.find("__")))},
               {"imported_from",
                {{"tool", "medseg_import_nnunet"},
                 {"folder", fs::absolute(src).lexically_normal().string()},
                 {"checkpoint", ("fold_" + fold + "/" + chk + ".pth")},
                 {"content_hash", content_hash_hex(pth.string())},
                 {"nnunet_epoch", m.epoch},
                 {"aliases_dropped", r.aliases_dropped}}}};
    if (num_classes > 0) m.extra["num_classes"] = num_classes;
    const fs::path dir = fs::path(out.path()) / ("fold_" + fold);
    fs::create_directories(dir);
    checkpoint::save_checkpoint((dir / (chk + ".ckpt")).string(), m);
  }
  for (const char* f : {"plans.json", "dataset.json", "dataset_fingerprint.json"})
    if (fs::is_regular_file(src / f)) fs::copy_file(src / f, fs::path(out.path()) / f);
  out.commit(o.overwrite);
  return r;
}

}  // namespace medseg::sharing
