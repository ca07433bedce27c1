#pragma once
// PlainConvUNet and ResidualEncoderUNet as dynamic-network-architectures builds them from nnU-Net's
// arch_kwargs. State-dict keys follow the Python modules: encoder.stages.*, encoder.stem.*,
// decoder.stages.*, decoder.transpconvs.*, decoder.seg_layers.* (no decoder.encoder.* or
// all_modules aliases: every tensor is registered once).
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>

#include <functional>

#include "models/layers.h"
#include "models/network.h"
#include "models/unet_blocks.h"

namespace medseg::models {

// The arch_kwargs of both U-Nets. `n_conv_per_stage` is read by PlainConvUNet, `n_blocks_per_stage`
// by ResidualEncoderUNet. Kernel sizes / strides are per stage, each a scalar or one entry per axis.
struct UNetOptions {
  UNetOptions(int64_t input_channels, int64_t num_classes, std::vector<int64_t> features_per_stage)
      : input_channels_(input_channels),
        num_classes_(num_classes),
        features_per_stage_(std::move(features_per_stage)) {}
  int64_t n_stages() const { return static_cast<int64_t>(features_per_stage_.size()); }
  LayerOptions layer_options() const;
  // Throws medseg::Error when list lengths do not match n_stages (`blocks_key` names the per-stage list).
  void validate(const std::string& blocks_key) const;

  TORCH_ARG(int64_t, input_channels);
  TORCH_ARG(int64_t, num_classes);
  TORCH_ARG(std::vector<int64_t>, features_per_stage);
  TORCH_ARG(int, spatial_dims) = 3;
  TORCH_ARG(std::vector<Shape>, kernel_sizes);
  TORCH_ARG(std::vector<Shape>, strides);
  TORCH_ARG(std::vector<int64_t>, n_conv_per_stage);
  TORCH_ARG(std::vector<int64_t>, n_blocks_per_stage);
  TORCH_ARG(std::vector<int64_t>, n_conv_per_stage_decoder);
  TORCH_ARG(bool, conv_bias) = true;
  TORCH_ARG(NormKind, norm) = NormKind::kInstance;
  TORCH_ARG(double, norm_eps) = 1e-5;
  TORCH_ARG(bool, norm_affine) = true;
  TORCH_ARG(double, dropout_p) = 0.0;
  TORCH_ARG(NonlinKind, nonlin) = NonlinKind::kLeakyReLU;
  TORCH_ARG(double, negative_slope) = 1e-2;
  TORCH_ARG(bool, deep_supervision) = true;
  TORCH_ARG(bool, inplace) = true;
  TORCH_ARG(bool, checkpoint_encoder) = false;
  TORCH_ARG(bool, init_weights) = true;
};

// "in_channels=1, num_classes=2, features_per_stage=[4, 8], ..., deep_supervision=true"
void print_unet_options(std::ostream& out, const UNetOptions& o);

struct UNetEncoderOptions {
  explicit UNetEncoderOptions(UNetOptions unet) : unet_(std::move(unet)) {}
  TORCH_ARG(UNetOptions, unet);
  // false: PlainConvEncoder (stages.<s>.0.convs...); true: ResidualEncoder (stem + stages.<s>.blocks...).
  TORCH_ARG(bool, residual) = false;
};

// Encoder stages; each stage's output is a skip. Runs each stage checkpointed when
// unet().checkpoint_encoder() is set (training only).
class UNetEncoderImpl : public torch::nn::Cloneable<UNetEncoderImpl> {
 public:
  explicit UNetEncoderImpl(UNetEncoderOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  std::vector<torch::Tensor> forward(torch::Tensor x);
  void zero_last_norms();

  UNetEncoderOptions options;

 private:
  std::function<torch::Tensor(const torch::Tensor&)> stage_fn(size_t s) const;

  StackedConvBlocks stem_{nullptr};
  // A Sequential of stages in dynamic-network-architectures; a list here because a plain stage is
  // itself a Sequential (which AnyModule cannot hold) and each stage's output is a skip. Same keys.
  torch::nn::ModuleList stages_{nullptr};
};
TORCH_MODULE(UNetEncoder);

class UNetDecoderImpl : public torch::nn::Cloneable<UNetDecoderImpl> {
 public:
  explicit UNetDecoderImpl(UNetOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  // skips in encoder order (bottleneck last). Outputs highest resolution first; with deep
  // supervision off only the full-resolution one.
  std::vector<torch::Tensor> forward(std::vector<torch::Tensor> skips);

  UNetOptions options;

 private:
  torch::nn::ModuleList stages_{nullptr};
  // ModuleLists in Python. Sequential here only because it keeps its children callable (AnyModule:
  // the conv type depends on the dimension); they are indexed, never run as a chain. Same keys.
  torch::nn::Sequential transpconvs_{nullptr}, seg_layers_{nullptr};
};
TORCH_MODULE(UNetDecoder);

class UNetBaseImpl : public SegmentationNetworkImpl {
 public:
  // Builds encoder and decoder from `options` (and re-initialises them like nnU-Net when
  // options.init_weights() is set).
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  std::vector<torch::Tensor> forward(const torch::Tensor& x) override;
  void set_deep_supervision(bool on) override;
  bool deep_supervision() const override { return options.deep_supervision(); }
  int spatial_dims() const override { return options.spatial_dims(); }
  std::string segmentation_head_prefix() const override { return "decoder.seg_layers."; }
  bool supports_channels_last() const override { return options.spatial_dims() == 3; }
  // Hands the shard to every conv block (models/spatial_shard.h); forward then checks that the slab
  // is aligned with the strides along the shard axis.
  void set_spatial_shard(std::optional<distributed::SpatialShard> shard) override;

  UNetOptions options;

 protected:
  UNetBaseImpl(UNetOptions options_, bool residual);
  bool residual_;
  UNetEncoder encoder_{nullptr};
  UNetDecoder decoder_{nullptr};
};

class PlainConvUNetImpl : public CloneableNetwork<PlainConvUNetImpl, UNetBaseImpl> {
 public:
  explicit PlainConvUNetImpl(UNetOptions options_);
  std::string class_name() const override { return "PlainConvUNet"; }
  // The stem is the encoder's first stage (unet.py's PlainConvUNet).
  EncoderKeys encoder_keys() const override {
    return {"encoder.stages", "encoder.stages.0", {"encoder.stages.0.0.convs.0.conv"}, ""};
  }
};
TORCH_MODULE(PlainConvUNet);

class ResidualEncoderUNetImpl : public CloneableNetwork<ResidualEncoderUNetImpl, UNetBaseImpl> {
 public:
  explicit ResidualEncoderUNetImpl(UNetOptions options_);
  std::string class_name() const override { return "ResidualEncoderUNet"; }
  EncoderKeys encoder_keys() const override {
    return {"encoder.stages", "encoder.stem", {"encoder.stem.convs.0.conv"}, ""};
  }
};
TORCH_MODULE(ResidualEncoderUNet);

}  // namespace medseg::models
