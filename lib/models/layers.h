#pragma once
// Dimension-generic factories for the torch::nn layers the networks are made of. A network is 2D or
// 3D at run time (plans say Conv2d or Conv3d), so layers are created here and held as AnyModule;
// the concrete torch::nn module is registered under the reference name (e.g. "conv", "norm").
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "distributed/halo.h"

namespace medseg::models {

using Shape = std::vector<int64_t>;

// A shape as plans.json's readers hold it (int) in the models' type.
inline Shape to_shape(const std::vector<int>& v) { return Shape(v.begin(), v.end()); }

// The number of elements of a shape (tokens of a patch grid, voxels of a window).
inline int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

enum class NormKind { kNone, kInstance, kBatch };
enum class NonlinKind { kNone, kLeakyReLU, kReLU };

// The per-layer settings nnU-Net's arch_kwargs carry (conv_bias, norm_op(_kwargs), dropout_op(_kwargs),
// nonlin(_kwargs)) plus medseg's in-place switch; shared by every conv block of a U-Net.
struct LayerOptions {
  TORCH_ARG(int, dims) = 3;
  TORCH_ARG(bool, conv_bias) = true;
  TORCH_ARG(NormKind, norm) = NormKind::kInstance;
  TORCH_ARG(double, norm_eps) = 1e-5;
  TORCH_ARG(bool, norm_affine) = true;
  TORCH_ARG(double, dropout_p) = 0.0;  // 0: no dropout layer (dropout_op None)
  TORCH_ARG(NonlinKind, nonlin) = NonlinKind::kLeakyReLU;
  TORCH_ARG(double, negative_slope) = 1e-2;
  TORCH_ARG(bool, inplace) = true;
};

// "conv_bias=true, norm=instance(eps=1e-05, affine=true), dropout=0, nonlin=leaky_relu(0.01), inplace=true":
// the part of a block's pretty_print that comes from its LayerOptions.
void print_layer_options(std::ostream& out, const LayerOptions& o);
// "[3, 3, 3]"
void print_shape(std::ostream& out, const std::vector<int64_t>& v);

struct InstanceNormOptions {
  /* implicit */ InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  // Defaults as torch::nn::InstanceNormOptions' (no affine parameters); nnU-Net's U-Nets set it.
  TORCH_ARG(bool, affine) = false;
};

// Instance normalisation with exactly the arithmetic of torch's InstanceNorm{2,3}d (batch norm over
// the (1, B*C, ...) reshape: biased variance, no running statistics), but whose output is not an
// autograd view of batch norm's output. torch's returns view_as(input), so the in-place LeakyReLU or
// residual add that follows is differentiated through CopySlices: two extra activation-sized gradient
// buffers per block and about 40 % more time for norm + activation on the CPU. Parameters "weight" and
// "bias" when affine, as torch's (checkpoints and nnU-Net imports keep their names).
class InstanceNormImpl : public torch::nn::Cloneable<InstanceNormImpl> {
 public:
  explicit InstanceNormImpl(InstanceNormOptions options_);
  // Registers weight and bias (affine only), ones and zeros as torch's; clone() calls it too.
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x);
  // With an active shard, statistics over every slab (models/spatial_shard.h); otherwise unchanged.
  void set_spatial_shard(std::optional<distributed::SpatialShard> shard) { shard_ = shard; }

  InstanceNormOptions options;
  torch::Tensor weight, bias;  // undefined without affine

 private:
  std::optional<distributed::SpatialShard> shard_;
};
TORCH_MODULE(InstanceNorm);

// A scalar or per-axis list broadcast to `dims` entries; throws medseg::Error naming `what` otherwise.
Shape per_axis(const Shape& v, int dims, const std::string& what);

// "Same" padding (k-1)/2 per axis, as dynamic-network-architectures sets it.
Shape same_padding(const Shape& kernel);

// Conv with "same" padding (k-1)/2 per axis, as dynamic-network-architectures builds it.
torch::nn::AnyModule make_conv(int dims, int64_t in, int64_t out, const Shape& kernel, const Shape& stride, bool bias);
// Transposed conv with kernel == stride (no padding), the U-Net upsampling.
torch::nn::AnyModule make_conv_transpose(int dims, int64_t in, int64_t out, const Shape& kernel_and_stride, bool bias);
torch::nn::AnyModule make_norm(int dims, NormKind kind, int64_t channels, double eps, bool affine);
torch::nn::AnyModule make_nonlin(NonlinKind kind, double negative_slope, bool inplace);
torch::nn::AnyModule make_dropout(int dims, double p);
torch::nn::AnyModule make_avg_pool(int dims, const Shape& kernel_and_stride);

// nnU-Net's InitWeights_He: kaiming_normal_(a=neg_slope) on every (transposed) conv weight, biases 0.
void he_init(torch::nn::Module& root, double neg_slope = 1e-2);

// Number of trainable elements, each tensor counted once even if reachable under two names.
int64_t unique_parameter_count(const torch::nn::Module& m);

}  // namespace medseg::models
