#pragma once
// Building blocks of dynamic-network-architectures' U-Nets, with the same submodule names so that
// state-dict keys match nnU-Net's (minus the `all_modules` alias, which is not registered here).
// Written as torch::nn modules are: an Options struct, children built in reset(), pretty_print.
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include "models/layers.h"

namespace medseg::models {

// Sets an option of a BlockOptions and returns the Options it belongs to (TORCH_ARG's setter would return
// the base, so that `BasicBlockDOptions(...).layers(l).stride(s)` would not compile).
#define MEDSEG_BLOCK_ARG(T, name)                    \
 public:                                             \
  Derived& name(T new_##name) {                      \
    name##_ = std::move(new_##name);                 \
    return static_cast<Derived&>(*this);             \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
  T& name() noexcept { return name##_; }             \
                                                     \
 private:                                            \
  T name##_

// What every conv block of these U-Nets takes: channels in and out, the kernel and the layer settings.
// The four block Options derive from it (CRTP, so that its setters chain with theirs).
template <typename Derived>
struct BlockOptions {
  BlockOptions(int64_t in_channels, int64_t out_channels, Shape kernel_size, LayerOptions layers)
      : in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(std::move(kernel_size)),
        layers_(std::move(layers)) {}
  MEDSEG_BLOCK_ARG(int64_t, in_channels);
  MEDSEG_BLOCK_ARG(int64_t, out_channels);
  MEDSEG_BLOCK_ARG(Shape, kernel_size);
  MEDSEG_BLOCK_ARG(LayerOptions, layers);
};
#undef MEDSEG_BLOCK_ARG

struct ConvDropoutNormReLUOptions : BlockOptions<ConvDropoutNormReLUOptions> {
  using BlockOptions::BlockOptions;
  TORCH_ARG(Shape, stride) = Shape{1};
  // false: no dropout layer even when layers().dropout_p() > 0 (conv2 of a residual block).
  TORCH_ARG(bool, with_dropout) = true;
  // false: conv -> norm only (conv2 of a residual block, the projection skip).
  TORCH_ARG(bool, with_nonlin) = true;
};

// conv -> [dropout] -> [norm] -> [nonlin]. Keys: conv.*, norm.*.
class ConvDropoutNormReLUImpl : public torch::nn::Cloneable<ConvDropoutNormReLUImpl> {
 public:
  explicit ConvDropoutNormReLUImpl(ConvDropoutNormReLUOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(torch::Tensor x);
  // The norm's affine parameters (undefined when there is no affine norm); ResEnc zero-initialises them.
  torch::Tensor norm_weight() const;
  torch::Tensor norm_bias() const;
  // With an active shard, `forward` takes and returns this rank's slab: the conv exchanges its halo,
  // instance norm reduces over the slabs. Throws medseg::Error for batch norm (not sharded).
  void set_spatial_shard(std::optional<distributed::SpatialShard> shard);

  ConvDropoutNormReLUOptions options;

 private:
  torch::Tensor sharded_conv_forward(const torch::Tensor& x) const;

  torch::nn::AnyModule conv_, dropout_, norm_, nonlin_;
  std::optional<distributed::SpatialShard> shard_;
};
TORCH_MODULE(ConvDropoutNormReLU);

struct StackedConvBlocksOptions : BlockOptions<StackedConvBlocksOptions> {
  using BlockOptions::BlockOptions;
  TORCH_ARG(int64_t, num_convs) = 1;
  TORCH_ARG(Shape, initial_stride) = Shape{1};  // the first conv's; the others have stride 1
};

// num_convs ConvDropoutNormReLU; the first one carries the stride. Keys: convs.<i>.*
class StackedConvBlocksImpl : public torch::nn::Cloneable<StackedConvBlocksImpl> {
 public:
  explicit StackedConvBlocksImpl(StackedConvBlocksOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(torch::Tensor x);

  StackedConvBlocksOptions options;

 private:
  torch::nn::Sequential convs_{nullptr};
};
TORCH_MODULE(StackedConvBlocks);

struct BasicBlockDOptions : BlockOptions<BasicBlockDOptions> {
  using BlockOptions::BlockOptions;
  TORCH_ARG(Shape, stride) = Shape{1};
};

// ResNet-D basic block: conv1 (conv-norm-act, strided) -> conv2 (conv-norm); skip = [avg-pool(stride)] +
// [1x1 conv (no bias) + norm] when stride != 1 or channels change; out += skip; nonlin2.
class BasicBlockDImpl : public torch::nn::Cloneable<BasicBlockDImpl> {
 public:
  explicit BasicBlockDImpl(BasicBlockDOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(torch::Tensor x);
  // init_last_bn_before_add_to_0: conv2.norm.weight = conv2.norm.bias = 0.
  void zero_last_norm();

  BasicBlockDOptions options;

 private:
  ConvDropoutNormReLU conv1_{nullptr}, conv2_{nullptr};
  torch::nn::AnyModule nonlin2_;
  torch::nn::Sequential skip_{nullptr};  // null: identity
};
TORCH_MODULE(BasicBlockD);

struct StackedResidualBlocksOptions : BlockOptions<StackedResidualBlocksOptions> {
  using BlockOptions::BlockOptions;
  TORCH_ARG(int64_t, n_blocks) = 1;
  TORCH_ARG(Shape, initial_stride) = Shape{1};  // the first block's; the others have stride 1
};

// n_blocks BasicBlockD, the first with the stage stride. Keys: blocks.<i>.*
class StackedResidualBlocksImpl : public torch::nn::Cloneable<StackedResidualBlocksImpl> {
 public:
  explicit StackedResidualBlocksImpl(StackedResidualBlocksOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(torch::Tensor x);
  void zero_last_norms();

  StackedResidualBlocksOptions options;

 private:
  torch::nn::Sequential blocks_{nullptr};
};
TORCH_MODULE(StackedResidualBlocks);

// Hands `shard` to every ConvDropoutNormReLU under `root` (the only blocks with sharded layers: see
// models/spatial_shard.h). All blocks are checked before any is changed.
void shard_conv_blocks(torch::nn::Module& root, const std::optional<distributed::SpatialShard>& shard);

}  // namespace medseg::models
