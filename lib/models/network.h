#pragma once
// The type-erased segmentation network every trainer / predictor works with, and the factory that
// builds one from a plans.json `architecture` block.
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/halo.h"
#include "plans/plans.h"

namespace medseg::models {

// The interface every network implements; a network derives from it through CloneableNetwork.
class SegmentationNetworkImpl : public torch::nn::Module {
 public:
  // Builds the network's children from its options (as torch::nn::Cloneable::reset: clone() calls it).
  virtual void reset() = 0;
  // Logits. With deep supervision on: one tensor per decoder scale, highest resolution first;
  // otherwise exactly one (full resolution).
  virtual std::vector<torch::Tensor> forward(const torch::Tensor& x) = 0;
  virtual void set_deep_supervision(bool on) = 0;
  virtual bool deep_supervision() const = 0;
  // Python-style class name, e.g. "ResidualEncoderUNet", "SwinUNETR".
  virtual std::string class_name() const = 0;
  virtual int spatial_dims() const = 0;
  // Where the segmentation heads' weights are named ("decoder.seg_layers." for the U-Nets, as in
  // nnU-Net): the only layers whose shapes follow the labels, skipped when fine-tuning on others.
  virtual std::string segmentation_head_prefix() const = 0;
  // Where a pretrained encoder goes (dynamic-network-architectures' key_to_encoder, key_to_stem,
  // keys_to_in_proj and key_to_lpe, which nnssl's checkpoints name in their own network): fine-tuning
  // from nnssl takes the encoder and the stem and leaves the rest as initialised. Empty `encoder`: the
  // network has no such encoder (SwinUNETR).
  struct EncoderKeys {
    std::string encoder, stem;
    std::vector<std::string> in_proj;  // the convolutions that see the input channels (without ".weight")
    std::string lpe;                   // the learnable position embedding, if any
  };
  virtual EncoderKeys encoder_keys() const { return {}; }
  // Whether forward takes a channels-last input (and weights) without a copy of any activation back to the
  // contiguous layout: the 3D U-Nets (convolutions, InstanceNorm, LeakyReLU, concatenation). Prediction in bf16
  // on the CPU runs such a network channels-last (docs/predict.md, "Channels-last in bf16").
  virtual bool supports_channels_last() const { return false; }
  // Trainable elements, each tensor once (deep-supervision heads included).
  int64_t parameter_count() const;
  // Spatial parallelism (docs/spatial_parallel.md): with an active shard, forward takes this rank's
  // slab of the patch and returns every output as this rank's slab; every rank of the shard must run
  // forward and backward together. nullopt (the default): the whole patch, exactly as before. This
  // base refuses (medseg::Error); the U-Nets override it.
  virtual void set_spatial_shard(std::optional<distributed::SpatialShard> shard);
  const std::optional<distributed::SpatialShard>& spatial_shard() const { return shard_; }

 protected:
  std::optional<distributed::SpatialShard> shard_;
};
TORCH_MODULE(SegmentationNetwork);

// Deep-copies `from`'s children into the children of the same names that `into`'s reset() built, in
// place, as torch::nn::Cloneable::clone() does with a module's children: each takes the original's
// tensors (cloned, or moved to `device`) and state, keeps its type, and every handle `into` holds to it
// stays valid.
void clone_children(const torch::nn::Module& from, torch::nn::Module& into,
                    const torch::optional<torch::Device>& device);

// torch::nn::Cloneable<Derived> for a network. A network cannot derive from Cloneable itself: its
// base is SegmentationNetworkImpl (the type trainers and predictors hold), and both are a Module.
// clone() does what Cloneable's does: a copy of the network (options, spatial shard, training mode)
// is rebuilt by reset() and takes deep copies of the original's children. `Base` is the network's own
// base class (UNetBaseImpl for the two U-Nets).
template <typename Derived, typename Base = SegmentationNetworkImpl>
class CloneableNetwork : public Base {
 public:
  using Base::Base;

  std::shared_ptr<torch::nn::Module> clone(
      const torch::optional<torch::Device>& device = torch::nullopt) const override {
    torch::NoGradGuard no_grad;
    // The networks keep every tensor in a child (Module's copy would share direct ones).
    TORCH_CHECK(
        this->named_parameters(/*recurse=*/false).is_empty() && this->named_buffers(/*recurse=*/false).is_empty(),
        "CloneableNetwork: register a network's parameters and buffers in its children");
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    // The copy shares this network's children until its reset() builds its own.
    for (const auto& child : copy->named_children().keys()) copy->unregister_module(child);
    copy->reset();
    clone_children(*this, *copy, device);
    return copy;
  }
};

struct NetworkBuildOptions {
  bool deep_supervision = true;
  bool inplace = true;                          // LeakyReLU and residual additions in place
  bool checkpoint_encoder = false;              // U-Nets: recompute each encoder stage in backward
  std::optional<bool> use_checkpoint_override;  // SwinUNETR: unset keeps arch_kwargs.use_checkpoint
  bool init_weights = true;                     // He init (+ zeroed last norms for ResEnc) like nnU-Net
};

// `architecture` = {"network_class_name": ..., "arch_kwargs": {...}} as in nnU-Net's plans.json
// (full python path or short name: PlainConvUNet, ResidualEncoderUNet; medseg.SwinUNETR / SwinUNETR),
// read by planning::architecture_from_json. Throws medseg::Error for unknown classes, a FileError
// naming `source` for malformed kwargs.
SegmentationNetwork build_network(const nlohmann::json& architecture, int64_t in_channels, int64_t num_classes,
                                  const NetworkBuildOptions& opts = {},
                                  const std::string& source = "architecture block");
// The same from an already parsed block (a ConfigurationPlan's `architecture`). Its own name: a braced
// JSON literal must not be ambiguous between the two.
SegmentationNetwork build_network_from_plan(const planning::ArchitecturePlan& plan, int64_t in_channels,
                                            int64_t num_classes, const NetworkBuildOptions& opts = {});

// "dynamic_network_architectures.architectures.unet.PlainConvUNet" -> "PlainConvUNet".
std::string short_class_name(const std::string& network_class_name);

}  // namespace medseg::models
