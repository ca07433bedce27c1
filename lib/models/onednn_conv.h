#pragma once
// A torch::nn::Conv3d whose small, batch-1 convolutions run on oneDNN. LibTorch's CPU dispatcher
// (1.13 and 2.x alike) sends a 3x3x3 conv with batch 1 and N*C*D*H <= 20480 to its native
// im2col path, which is 5-25x slower than oneDNN there, backward included: the deep stages of a
// U-Net and SwinUNETR's low-resolution blocks at the usual batch of 1-2. Those calls go through
// an autograd function that runs forward and both gradients as oneDNN convolutions; every other
// call is torch's own. Parameters, names and initialisation are Conv3d's.
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace medseg::models {

class OneDnnConv3dImpl : public torch::nn::Conv3dImpl {
 public:
  // Zero padding, dilation 1, groups 1: the convs the U-Nets and SwinUNETR are made of.
  OneDnnConv3dImpl(int64_t in, int64_t out, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                   std::vector<int64_t> padding, bool with_bias);
  torch::Tensor forward(const torch::Tensor& input);
  // A OneDnnConv3d: Conv3dImpl's clone() (torch::nn::Cloneable<Conv3dImpl>) would return a plain
  // Conv3d, which a Sequential or AnyModule holding this type cannot take back.
  std::shared_ptr<torch::nn::Module> clone(
      const torch::optional<torch::Device>& device = torch::nullopt) const override;

  // Every call goes through torch's own convolution dispatch (native im2col where torch picks it), as
  // a PyTorch network runs: bit for bit the same fp32 numbers, at torch's speed.
  void set_torch_dispatch(bool on) { torch_dispatch_ = on; }

 private:
  // The padding as numbers: options.padding() is a variant (c10:: in 1.13, std:: in 2.x).
  std::vector<int64_t> padding_;
  bool torch_dispatch_ = false;
};
TORCH_MODULE(OneDnnConv3d);

// set_torch_dispatch(on) on every OneDnnConv3d in `net` (medseg_predict --exact_nnunet).
void use_torch_conv_dispatch(torch::nn::Module& net, bool on);

// The conv (zero padding, dilation 1, groups 1) as oneDNN forward and backward; `bias` may be
// undefined. Needs padding <= kernel - 1 per axis. Exposed for the gradient tests.
at::Tensor onednn_conv3d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::IntArrayRef stride,
                         at::IntArrayRef padding);

// The same without autograd, for layers with their own autograd function (the spatially sharded
// conv): forward, and the gradients {input, weight, bias} that `mask` asks for (bias: g summed).
at::Tensor onednn_conv3d_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                 at::IntArrayRef stride, at::IntArrayRef padding);
std::array<at::Tensor, 3> onednn_conv3d_backward(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weight,
                                                 at::IntArrayRef stride, at::IntArrayRef padding,
                                                 std::array<bool, 3> mask);

// Whether OneDnnConv3d takes its own path for this input, weight and stride (CPU float, oneDNN
// built in, and a shape LibTorch would send to its native path).
bool onednn_conv3d_applies(const at::Tensor& x, const at::Tensor& weight, at::IntArrayRef stride,
                           at::IntArrayRef padding);

}  // namespace medseg::models
