#include "checkpoint/checkpoint.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "core/error.h"
#include "core/json_io.h"
#include "core/strings.h"

using nlohmann::json;

namespace medseg::checkpoint {
namespace {

constexpr const char* kKind = "medseg-training-checkpoint";
const std::string kOptPrefix = "optimizer/";
const std::string kRngPrefix = "rng/";

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

at::Tensor bytes_tensor(const std::string& s) {
  at::Tensor t = at::empty({static_cast<int64_t>(s.size())}, at::kByte);
  if (!s.empty()) std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<std::size_t>(c.numel()));
}

TensorArchive to_archive(const Checkpoint& ck) {
  TensorArchive a;
  for (const auto& [name, t] : ck.weights) a.tensors.emplace_back(kWeightsPrefix + name, t);
  for (const auto& [param, slots] : ck.optimizer.buffers)
    for (const auto& [slot, t] : slots) a.tensors.emplace_back(kOptPrefix + param + "/" + slot, t);
  if (ck.rng.cpu.defined()) a.tensors.emplace_back(kRngPrefix + "cpu", ck.rng.cpu);
  for (std::size_t i = 0; i < ck.rng.cuda.size(); ++i)
    a.tensors.emplace_back(kRngPrefix + "cuda/" + std::to_string(i), ck.rng.cuda[i]);
  for (std::size_t i = 0; i < ck.rng.workers.size(); ++i)
    a.tensors.emplace_back(kRngPrefix + "worker/" + std::to_string(i), bytes_tensor(ck.rng.workers[i]));
  json scalars = json::object();
  for (const auto& [k, v] : ck.optimizer.scalars) scalars[k] = v;
  a.meta = {{"kind", kKind},
            {"epoch", ck.epoch},
            {"optimizer", {{"type", ck.optimizer.type}, {"groups", ck.optimizer.groups}, {"scalars", scalars}}},
            {"grad_scaler", ck.grad_scaler},
            {"rng", {{"cuda_devices", ck.rng.cuda.size()}, {"workers", ck.rng.workers.size()}}},
            {"sampler", ck.sampler},
            {"logs", ck.logs},
            {"ema", ck.ema},
            {"plans", ck.plans},
            {"dataset", json(ck.dataset)},
            // The metadata is one key-sorted object: the copy in the file's order travels as text.
            {"dataset_text", ck.dataset.dump()},
            {"trainer_config", ck.trainer_config},
            {"fingerprint", ck.fingerprint},
            {"extra", ck.extra}};
  if (ck.weights_only) a.meta["weights_only"] = true;
  return a;
}

// "optimizer/<param name with dots>/<slot>": the slot is after the last '/'.
void add_optimizer_tensor(Checkpoint& ck, const std::string& key, const at::Tensor& t) {
  const std::string rest = key.substr(kOptPrefix.size());
  const auto slash = rest.rfind('/');
  if (slash == std::string::npos) throw std::runtime_error("bad optimizer key '" + key + "'");
  ck.optimizer.buffers[rest.substr(0, slash)][rest.substr(slash + 1)] = t;
}

void add_rng_tensor(Checkpoint& ck, const std::string& key, const at::Tensor& t) {
  const std::string rest = key.substr(kRngPrefix.size());
  if (rest == "cpu") {
    ck.rng.cpu = t;
  } else if (starts_with(rest, "cuda/")) {
    const auto i = std::stoul(rest.substr(5));
    if (ck.rng.cuda.size() <= i) ck.rng.cuda.resize(i + 1);
    ck.rng.cuda[i] = t;
  } else if (starts_with(rest, "worker/")) {
    const auto i = std::stoul(rest.substr(7));
    if (ck.rng.workers.size() <= i) ck.rng.workers.resize(i + 1);
    ck.rng.workers[i] = tensor_bytes(t);
  } else {
    throw std::runtime_error("unknown rng key '" + key + "'");
  }
}

Checkpoint from_archive(const std::string& path, const TensorArchive& a) {
  MEDSEG_CHECK_FILE(a.meta.value("kind", "") == kKind, path, "not a medseg training checkpoint (meta.kind)");
  Checkpoint ck;
  try {
    const json& m = a.meta;
    ck.epoch = m.at("epoch").get<int64_t>();
    ck.optimizer.type = m.at("optimizer").at("type").get<std::string>();
    ck.optimizer.groups = m.at("optimizer").at("groups");
    for (const auto& [k, v] : m.at("optimizer").at("scalars").items()) ck.optimizer.scalars[k] = v;
    ck.grad_scaler = m.value("grad_scaler", json::object());
    ck.sampler = m.value("sampler", json::object());
    ck.logs = m.value("logs", json::array());
    ck.ema = m.value("ema", json());
    ck.plans = m.value("plans", json());
    // Checkpoints older than dataset_text were written by a medseg that refused region labels out of
    // name order, so their key-sorted copy is in the order they were trained with.
    ck.dataset = m.contains("dataset_text") ? parse_json_text<nlohmann::ordered_json>(
                                                  m.at("dataset_text").get<std::string>(), path + " (dataset_text)")
                                            : nlohmann::ordered_json(m.value("dataset", json()));
    ck.trainer_config = m.value("trainer_config", json());
    ck.fingerprint = m.value("fingerprint", json());
    ck.extra = m.value("extra", json::object());
    ck.weights_only = m.value("weights_only", false);
    for (const auto& [key, t] : a.tensors) {
      if (starts_with(key, kWeightsPrefix)) {
        ck.weights.emplace_back(key.substr(std::string(kWeightsPrefix).size()), t);
      } else if (starts_with(key, kOptPrefix)) {
        add_optimizer_tensor(ck, key, t);
      } else if (starts_with(key, kRngPrefix)) {
        add_rng_tensor(ck, key, t);
      } else {
        throw std::runtime_error("unknown tensor key '" + key + "'");
      }
    }
  } catch (const FileError&) { throw; } catch (const std::exception& e) {
    throw FileError(path, "invalid checkpoint metadata (" + one_line(e.what()) + ")");
  }
  return ck;
}

std::string list_some(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < 5; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > 5) s += concat(", ... (", v.size(), " in all)");
  return s;
}

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& ck) { write_archive(path, to_archive(ck)); }

Checkpoint load_checkpoint(const std::string& path) { return from_archive(path, read_archive(path)); }

NamedTensors module_weights(const torch::nn::Module& model) {
  NamedTensors out;
  for (const auto& item : model.named_parameters(true)) out.emplace_back(item.key(), item.value());
  for (const auto& item : model.named_buffers(true)) out.emplace_back(item.key(), item.value());
  return out;
}

void load_weights(torch::nn::Module& model, const NamedTensors& weights, bool strict) {
  std::map<std::string, at::Tensor> src(weights.begin(), weights.end());
  NamedTensors dst = module_weights(model);
  std::vector<std::string> missing, unexpected;
  std::set<std::string> used;
  for (const auto& [name, t] : dst)
    if (!src.count(name)) missing.push_back(name);
  for (const auto& w : weights) {
    const std::string& name = w.first;  // a named reference: C++17 lambdas cannot capture a structured binding
    if (!std::any_of(dst.begin(), dst.end(), [&](const auto& d) { return d.first == name; }))
      unexpected.push_back(name);
  }
  MEDSEG_CHECK(!strict || missing.empty(), "checkpoint: weights missing for ", list_some(missing));
  MEDSEG_CHECK(!strict || unexpected.empty(), "checkpoint: unexpected weights ", list_some(unexpected));

  torch::NoGradGuard no_grad;
  // The first module tensor loaded from each checkpoint storage; later aliases are tied to it.
  std::map<std::pair<const void*, std::vector<int64_t>>, at::Tensor> first_of;
  for (auto& [name, target] : dst) {
    auto it = src.find(name);
    if (it == src.end()) continue;
    const at::Tensor& value = it->second;
    MEDSEG_CHECK(value.sizes() == target.sizes(), "checkpoint: shape of '", name, "' is ", c10::str(value.sizes()),
                 ", the model expects ", c10::str(target.sizes()));
    std::vector<int64_t> view{value.storage_offset()};
    view.insert(view.end(), value.strides().begin(), value.strides().end());
    const auto key = std::make_pair(static_cast<const void*>(value.storage().unsafeGetStorageImpl()), view);
    auto f = first_of.find(key);
    if (f == first_of.end()) {
      target.copy_(value);
      first_of.emplace(key, target);
    } else if (!f->second.is_same(target) &&
               f->second.storage().unsafeGetStorageImpl() != target.storage().unsafeGetStorageImpl()) {
      target.set_data(f->second);  // restore the sharing the checkpoint recorded
    }
  }
}

}  // namespace medseg::checkpoint
