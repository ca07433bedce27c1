#include "sharing/nnunet_weights.h"

#include <ATen/ATen.h>

#include <map>
#include <set>

#include "core/error.h"
#include "core/path_component.h"
#include "models/network.h"

namespace medseg::sharing {

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
