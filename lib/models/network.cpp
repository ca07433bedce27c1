#include "models/network.h"

#include <torch/nn/cloneable.h>

#include "core/error.h"
#include "models/arch_kwargs.h"
#include "models/layers.h"
#include "models/primus.h"
#include "models/swin_unetr.h"
#include "models/unet.h"

namespace medseg::models {

namespace {

// Cloneable::clone() deep-copies a module's children into the ones its reset() registered through
// Module::clone_, which only a Cloneable may call. This Cloneable lends that step to a network: it
// holds `from`'s children, and its reset() (which clone() calls on its copy) registers `into`'s.
class ChildCloner : public torch::nn::Cloneable<ChildCloner> {
 public:
  ChildCloner(const torch::nn::Module& from, torch::nn::Module& into) : into_(&into) {
    for (const auto& child : from.named_children()) register_module(child.key(), child.value());
  }
  void reset() override {
    for (const auto& child : into_->named_children()) register_module(child.key(), child.value());
  }

 private:
  torch::nn::Module* into_;
};

SegmentationNetwork as_network(std::shared_ptr<SegmentationNetworkImpl> impl) {
  return SegmentationNetwork(std::move(impl));
}
}  // namespace

void clone_children(const torch::nn::Module& from, torch::nn::Module& into,
                    const torch::optional<torch::Device>& device) {
  ChildCloner(from, into).clone(device);  // the returned ChildCloner only holds `into`'s children
}

int64_t SegmentationNetworkImpl::parameter_count() const { return unique_parameter_count(*this); }

void SegmentationNetworkImpl::set_spatial_shard(std::optional<distributed::SpatialShard> shard) {
  MEDSEG_CHECK(!shard, "network: ", class_name(), " has no spatially sharded forward");
}

std::string short_class_name(const std::string& network_class_name) {
  const auto p = network_class_name.rfind('.');
  return p == std::string::npos ? network_class_name : network_class_name.substr(p + 1);
}

SegmentationNetwork build_network(const nlohmann::json& architecture, int64_t in_channels, int64_t num_classes,
                                  const NetworkBuildOptions& opts, const std::string& source) {
  MEDSEG_CHECK(architecture.is_object() && architecture.contains("network_class_name") &&
                   architecture.at("network_class_name").is_string(),
               "network: architecture block needs 'network_class_name' and 'arch_kwargs'");
  const std::string full = architecture.at("network_class_name").get<std::string>();
  const std::string name = short_class_name(full);
  MEDSEG_CHECK(name == "PlainConvUNet" || name == "ResidualEncoderUNet" || name == "ResEncL" || name == "SwinUNETR" ||
                   name.rfind("Primus", 0) == 0,
               "network: unknown network_class_name '", full, "'");
  return build_network_from_plan(planning::architecture_from_json(architecture, source), in_channels, num_classes,
                                 opts);
}

SegmentationNetwork build_network_from_plan(const planning::ArchitecturePlan& plan, int64_t in_channels,
                                            int64_t num_classes, const NetworkBuildOptions& opts) {
  if (plan.is_plain_unet() || plan.is_residual_encoder_unet()) {
    const bool residual = plan.is_residual_encoder_unet();
    UNetOptions o = unet_options(plan, in_channels, num_classes);
    o.deep_supervision(opts.deep_supervision).inplace(opts.inplace).checkpoint_encoder(opts.checkpoint_encoder);
    o.init_weights(opts.init_weights);
    if (residual) return as_network(std::make_shared<ResidualEncoderUNetImpl>(o));
    return as_network(std::make_shared<PlainConvUNetImpl>(o));
  }
  if (plan.is_swin_unetr()) {
    SwinUNETROptions o = swin_options(plan, in_channels, num_classes);
    o.inplace(opts.inplace);
    if (opts.use_checkpoint_override) o.use_checkpoint(*opts.use_checkpoint_override);
    return as_network(std::make_shared<SwinUNETRImpl>(o));
  }
  if (plan.is_primus()) {
    auto net = std::make_shared<PrimusImpl>(primus_options(*plan.primus, in_channels, num_classes));
    net->set_checkpointing(opts.checkpoint_encoder || opts.use_checkpoint_override.value_or(false));
    return as_network(net);
  }
  throw Error("network: unknown network_class_name '" + plan.network_class_name + "'");
}

}  // namespace medseg::models
