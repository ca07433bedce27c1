#pragma once
// MONAI's convolutional UNETR blocks (dynunet_block.py / unetr_block.py) with MONAI's submodule names:
// a MONAI `Convolution` is an nn.Sequential whose conv is named "conv", hence keys like
// encoder1.layer.conv1.conv.weight. Norms are InstanceNorm (affine=False, no parameters).
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>

#include "models/layers.h"

namespace medseg::models {

struct NamedConvOptions {
  NamedConvOptions(std::string name, int dims, int64_t in_channels, int64_t out_channels, Shape kernel_size)
      : name_(std::move(name)),
        dims_(dims),
        in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(std::move(kernel_size)) {}
  TORCH_ARG(std::string, name);  // the conv's key: "conv" in a MONAI Convolution, "proj" in the patch embedding
  TORCH_ARG(int, dims);
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(Shape, kernel_size);
  TORCH_ARG(Shape, stride) = Shape{1};  // ignored when transposed (stride = kernel)
  TORCH_ARG(bool, bias) = false;
  TORCH_ARG(bool, transposed) = false;  // a transposed conv with kernel == stride
};

// One conv registered under options.name(): MONAI's Convolution is an nn.Sequential whose conv is
// "conv", SwinUNETR's patch embedding one whose conv is "proj". Not a torch::nn::Sequential here:
// LibTorch's Sequential::clone() (1.13 and 2.x) names the copy's elements "0", "1", ..., which
// would change the state-dict keys of a cloned network.
class NamedConvImpl : public torch::nn::Cloneable<NamedConvImpl> {
 public:
  explicit NamedConvImpl(NamedConvOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x) { return conv_.forward(x); }

  NamedConvOptions options;

 private:
  torch::nn::AnyModule conv_;
};
TORCH_MODULE(NamedConv);

// The options of every block below (UnetOutBlock ignores `inplace`).
struct UnetrBlockOptions {
  UnetrBlockOptions(int spatial_dims, int64_t in_channels, int64_t out_channels)
      : spatial_dims_(spatial_dims), in_channels_(in_channels), out_channels_(out_channels) {}
  TORCH_ARG(int, spatial_dims);
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(bool, inplace) = true;  // LeakyReLU and the residual addition in place
};

// conv3 -> IN -> LeakyReLU(0.01) -> conv3 -> IN; skip = 1x1 conv + IN when channels change; add; LeakyReLU.
class UnetResBlockImpl : public torch::nn::Cloneable<UnetResBlockImpl> {
 public:
  explicit UnetResBlockImpl(UnetrBlockOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(torch::Tensor x);

  UnetrBlockOptions options;

 private:
  NamedConv conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  torch::nn::AnyModule norm1_, norm2_, norm3_, lrelu_;
};
TORCH_MODULE(UnetResBlock);

// UnetrBasicBlock(res_block=True): keys layer.*
class UnetrBasicBlockImpl : public torch::nn::Cloneable<UnetrBasicBlockImpl> {
 public:
  explicit UnetrBasicBlockImpl(UnetrBlockOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x) { return layer_->forward(x); }

  UnetrBlockOptions options;

 private:
  UnetResBlock layer_{nullptr};
};
TORCH_MODULE(UnetrBasicBlock);

// UnetrUpBlock: transp_conv (k=2, s=2, no bias) -> cat(skip) -> UnetResBlock(2*out -> out).
class UnetrUpBlockImpl : public torch::nn::Cloneable<UnetrUpBlockImpl> {
 public:
  explicit UnetrUpBlockImpl(UnetrBlockOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& skip);

  UnetrBlockOptions options;

 private:
  NamedConv transp_conv_{nullptr};
  UnetResBlock conv_block_{nullptr};
};
TORCH_MODULE(UnetrUpBlock);

// UnetOutBlock: 1x1 conv with bias. Keys conv.conv.*
class UnetOutBlockImpl : public torch::nn::Cloneable<UnetOutBlockImpl> {
 public:
  explicit UnetOutBlockImpl(UnetrBlockOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x) { return conv_->forward(x); }

  UnetrBlockOptions options;

 private:
  NamedConv conv_{nullptr};
};
TORCH_MODULE(UnetOutBlock);

}  // namespace medseg::models
