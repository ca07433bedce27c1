#include "sharing/nnunet_weights.h"

#include <ATen/ATen.h>

#include <map>
#include <set>
#include <unordered_map>

#include "core/digest.h"
#include "core/error.h"
#include "core/path_component.h"
#include "models/network.h"

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

// dtype, shape and bytes of a contiguous tensor.
uint64_t tensor_digest(const at::Tensor& t) {
  uint64_t h = fnv1a(c10::toString(t.scalar_type()));
  for (const int64_t s : t.sizes()) h = fnv1a(&s, sizeof s, h);
  return fnv1a(t.data_ptr(), t.numel() * t.element_size(), h);
}

// Each alias must equal a kept tensor (its twin): nothing is dropped that the kept weights do not hold.
void check_aliases(const checkpoint::NamedTensors& kept, const std::vector<std::pair<std::string, at::Tensor>>& aliases,
                   const std::string& pth) {
  // Kept tensors by a digest of dtype, shape and bytes, so each alias is compared with the tensors that
  // can equal it (comparing with every kept tensor was quadratic: 30 k aliases took minutes). Tensors of
  // one digest are equal but for a hash collision, so the walk stops at the first equal one: many tensors
  // are equal (zero biases, unit norm weights), and walking them all was quadratic again.
  std::unordered_map<uint64_t, std::vector<const at::Tensor*>> by_digest;
  for (const auto& kv : kept) by_digest[tensor_digest(kv.second)].push_back(&kv.second);
  for (const auto& [name, t] : aliases) {
    bool ok = false;
    if (const auto same = by_digest.find(tensor_digest(t)); same != by_digest.end())
      for (auto it = same->second.begin(); it != same->second.end() && !ok; ++it)
        ok = (*it)->sizes() == t.sizes() && (*it)->scalar_type() == t.scalar_type() && at::equal(**it, t);
    MEDSEG_CHECK_FILE(ok, pth, "'", printable(name),
                      "' looks like an alias but no kept tensor has its values; not converting");
  }
}

}  // namespace

// network_weights without nnU-Net's aliases; each dropped one must equal a kept tensor (its twin first).
checkpoint::NamedTensors weights_without_aliases(const PickleValue& weights, const std::string& pth, int64_t* dropped) {
  checkpoint::NamedTensors kept;
  std::vector<std::pair<std::string, at::Tensor>> aliases;
  for (const auto& [k, v] : weights.dict) {
    MEDSEG_CHECK_FILE(k->kind == PickleValue::Kind::String && v->kind == PickleValue::Kind::Tensor, pth,
                      "'network_weights' holds something other than named tensors");
    const std::string name = strip_prefixes(k->s);
    const at::Tensor& t = v->tensor;
    MEDSEG_CHECK_FILE(!at::isFloatingType(t.scalar_type()) || t.numel() == 0 || at::isfinite(t).all().item<bool>(), pth,
                      "network_weights '", printable(name), "' holds NaN or infinite values");
    (alias_name(name) ? aliases : kept).emplace_back(name, t.contiguous());
  }
  check_aliases(kept, aliases, pth);
  *dropped = static_cast<int64_t>(aliases.size());
  return kept;
}

ImportedShape imported_shape(const planning::Plans& plans, const io::DatasetInfo& dataset,
                             const std::string& configuration, const std::string& pth) {
  if (!plans.has_configuration(configuration)) {
    std::string names;
    for (const std::string& n : plans.configuration_names()) names += (names.empty() ? "" : ", ") + n;
    throw FileError(pth, "init_args.configuration '" + configuration + "' is not a configuration of " + plans.source +
                             " (it has: " + names + ")");
  }
  const planning::ConfigurationPlan& cfg = plans.configuration(configuration);
  ImportedShape s;
  s.in_channels = dataset.num_channels() +
                  (cfg.previous_stage.empty() ? 0 : static_cast<int64_t>(io::foreground_labels(dataset.labels).size()));
  s.num_classes = io::network_outputs(dataset);
  return s;
}

namespace {

std::string shape_text(at::IntArrayRef s) { return c10::str(s); }

// One tensor against the network's: the same shape, a dtype the network can take.
void check_tensor(const std::string& name, const at::Tensor& t, const at::Tensor& want, bool parameter,
                  const std::string& pth) {
  const auto fail = [&](const std::string& why) {
    throw FileError(pth, "network_weights '" + printable(name) + "' " + why);
  };
  if (t.sizes() != want.sizes())
    fail("has shape " + shape_text(t.sizes()) + "; the plans' network needs " + shape_text(want.sizes()));
  if (parameter ? !at::isFloatingType(t.scalar_type()) : t.scalar_type() != want.scalar_type())
    fail(std::string("is ") + c10::toString(t.scalar_type()) + "; the network's " +
         (parameter ? "parameters are floating point" : std::string("buffer is ") + c10::toString(want.scalar_type())));
}

}  // namespace

void check_weights_fit(const checkpoint::NamedTensors& weights, const planning::ConfigurationPlan& cfg,
                       const ImportedShape& shape, const std::string& pth) {
  models::NetworkBuildOptions bo;
  bo.deep_supervision = false;
  bo.init_weights = false;
  models::SegmentationNetwork net{nullptr};
  try {
    net = models::build_network_from_plan(cfg.architecture, shape.in_channels, shape.num_classes, bo);
  } catch (const std::exception& e) {
    throw FileError(pth, "the plans' network for configuration '" + cfg.name + "' cannot be built: " + e.what());
  }
  std::map<std::string, std::pair<at::Tensor, bool>> wanted;  // name -> (tensor, is a parameter)
  for (const auto& p : net->named_parameters(true)) wanted.emplace(p.key(), std::make_pair(p.value(), true));
  for (const auto& b : net->named_buffers(true)) wanted.emplace(b.key(), std::make_pair(b.value(), false));
  std::set<std::string> seen;
  for (const auto& [name, t] : weights) {
    const auto it = wanted.find(name);
    MEDSEG_CHECK_FILE(it != wanted.end(), pth, "network_weights has '", printable(name),
                      "', which the plans' network (configuration '", cfg.name, "') does not have");
    MEDSEG_CHECK_FILE(seen.insert(name).second, pth, "network_weights has '", printable(name), "' twice");
    check_tensor(name, t, it->second.first, it->second.second, pth);
  }
  for (const auto& [name, w] : wanted)
    MEDSEG_CHECK_FILE(seen.count(name), pth, "network_weights lacks '", name,
                      "', which the plans' network (configuration '", cfg.name, "') needs");
}

std::vector<int64_t> checked_mirror_axes(const std::vector<int64_t>& axes, const std::vector<bool>& integral, int dim,
                                         const std::string& pth) {
  std::set<int64_t> seen;
  for (size_t k = 0; k < axes.size(); ++k) {
    MEDSEG_CHECK_FILE(integral[k] && axes[k] >= 0 && axes[k] < dim && seen.insert(axes[k]).second, pth,
                      "inference_allowed_mirroring_axes must be distinct axes of the ", dim, "D patch (0..", dim - 1,
                      "); item ", k, " is not");
  }
  return axes;
}

}  // namespace medseg::sharing
