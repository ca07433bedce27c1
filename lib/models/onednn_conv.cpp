#include "models/onednn_conv.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <utility>
#include <vector>

namespace medseg::models {
namespace {

using Ints = std::vector<int64_t>;

at::Tensor conv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const Ints& padding, const Ints& stride,
                const Ints& dilation) {
  const c10::optional<at::Tensor> bias = b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt;
  const auto f = x.suggest_memory_format();
  return at::mkldnn_convolution(x.contiguous(f), w.contiguous(f), bias, padding, stride, dilation, 1);
}

// dL/dx: the transposed convolution, written as a stride-1 conv of the gradient, zero-dilated by
// the stride and padded to the input's extent, with the flipped, in/out-swapped kernel.
at::Tensor input_grad(const at::Tensor& g, const at::Tensor& w, at::IntArrayRef x_sizes, const Ints& stride,
                      const Ints& padding) {
  at::Tensor gd = g;
  if (stride != Ints{1, 1, 1}) {
    Ints sizes{g.size(0), g.size(1)};
    for (int d = 0; d < 3; ++d) sizes.push_back((g.size(2 + d) - 1) * stride[d] + 1);
    gd = at::zeros(sizes, g.options());
    const int64_t end = std::numeric_limits<int64_t>::max();
    gd.slice(2, 0, end, stride[0]).slice(3, 0, end, stride[1]).slice(4, 0, end, stride[2]).copy_(g);
  }
  // Input positions past the last window (when (L + 2p - k) is not a multiple of the stride)
  // received nothing: pad the gradient on the far side so the result has the input's extent.
  Ints extra(6, 0);  // constant_pad_nd order: last axis first
  bool any_extra = false;
  for (int d = 0; d < 3; ++d) {
    const int64_t e = (x_sizes[2 + d] + 2 * padding[d] - w.size(2 + d)) % stride[d];
    extra[2 * (2 - d) + 1] = e;
    any_extra = any_extra || e > 0;
  }
  if (any_extra) gd = at::constant_pad_nd(gd, extra, 0);
  Ints pad(3);
  for (int d = 0; d < 3; ++d) pad[d] = w.size(2 + d) - 1 - padding[d];
  const at::Tensor wt = w.flip({2, 3, 4}).transpose(0, 1);
  at::Tensor gx = conv(gd, wt, at::Tensor(), pad, {1, 1, 1}, {1, 1, 1});
  TORCH_CHECK(gx.sizes() == x_sizes, "onednn_conv3d: input gradient has shape ", gx.sizes(), ", expected ", x_sizes);
  return gx;
}

// dL/dw: a conv of the input (channels as batch, batch as channels) with the gradient as kernel,
// dilated by the stride; the first k positions per axis are the kernel's.
at::Tensor weight_grad(const at::Tensor& x, const at::Tensor& g, at::IntArrayRef w_sizes, const Ints& stride,
                       const Ints& padding) {
  at::Tensor gw = conv(x.transpose(0, 1), g.transpose(0, 1), at::Tensor(), padding, {1, 1, 1}, stride);
  for (int d = 0; d < 3; ++d) gw = gw.narrow(2 + d, 0, w_sizes[2 + d]);
  return gw.transpose(0, 1).contiguous();
}

struct OneDnnConvFunction : public torch::autograd::Function<OneDnnConvFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b, Ints stride, Ints padding) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    const bool has_bias = b.numel() > 0;  // empty: no bias (see onednn_conv3d)
    ctx->saved_data["bias"] = has_bias;
    return onednn_conv3d_forward(x, w, has_bias ? b : at::Tensor(), stride, padding);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1];
    const Ints stride = ctx->saved_data["stride"].toIntVector();
    const Ints padding = ctx->saved_data["padding"].toIntVector();
    const auto g = onednn_conv3d_backward(grads[0], x, w, stride, padding,
                                          {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                           ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)});
    return {g[0], g[1], g[2], at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor onednn_conv3d_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                 at::IntArrayRef stride, at::IntArrayRef padding) {
  return conv(x, weight, bias, padding.vec(), stride.vec(), {1, 1, 1});
}

std::array<at::Tensor, 3> onednn_conv3d_backward(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weight,
                                                 at::IntArrayRef stride, at::IntArrayRef padding,
                                                 std::array<bool, 3> mask) {
  const at::Tensor g = grad.contiguous();
  const Ints s = stride.vec(), p = padding.vec();
  std::array<at::Tensor, 3> out;
  if (mask[0]) out[0] = input_grad(g, weight, x.sizes(), s, p);
  if (mask[1]) out[1] = weight_grad(x, g, weight.sizes(), s, p);
  if (mask[2]) out[2] = g.sum({0, 2, 3, 4});
  return out;
}

bool onednn_conv3d_applies(const at::Tensor& x, const at::Tensor& weight, at::IntArrayRef stride,
                           at::IntArrayRef padding) {
  // #lizard forgives: LibTorch's own conditions (ConvParams::use_mkldnn), kept as its expressions to compare
  if (!at::hasMKLDNN() || x.dim() != 5 || !x.device().is_cpu() || x.scalar_type() != at::kFloat ||
      weight.scalar_type() != at::kFloat || x.is_mkldnn() || stride.size() != 3 || padding.size() != 3)
    return false;
  for (int d = 0; d < 3; ++d)
    if (padding[d] > weight.size(2 + d) - 1) return false;
  // LibTorch's own choice (ConvParams::use_mkldnn): oneDNN unless batch 1, kernel <= 3 in the last
  // two axes and N*C*D*H <= 20480; a 1x1 kernel, unstrided, on one thread stays native too.
  const bool pointwise_single = stride == at::IntArrayRef{1, 1, 1} && x.size(0) < 16 && weight.size(-1) == 1 &&
                                weight.size(-2) == 1 && at::get_num_threads() <= 1;
  const bool torch_uses_onednn = x.size(0) > 1 || (weight.size(-1) > 3 && weight.size(-2) > 3) ||
                                 x.size(0) * x.size(1) * x.size(2) * x.size(3) > 20480;
  return !pointwise_single && !torch_uses_onednn;
}

at::Tensor onednn_conv3d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::IntArrayRef stride,
                         at::IntArrayRef padding) {
  // LibTorch 1.13's Function::apply cannot take an undefined tensor: "no bias" travels as an empty one.
  const at::Tensor b = bias.defined() ? bias : at::empty({0}, x.options());
  return OneDnnConvFunction::apply(x, weight, b, stride.vec(), padding.vec());
}

OneDnnConv3dImpl::OneDnnConv3dImpl(int64_t in, int64_t out, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                                   std::vector<int64_t> padding, bool with_bias)
    : torch::nn::Conv3dImpl(torch::nn::Conv3dOptions(in, out, torch::ExpandingArray<3>(at::IntArrayRef(kernel)))
                                .stride(torch::ExpandingArray<3>(at::IntArrayRef(stride)))
                                .padding(torch::ExpandingArray<3>(at::IntArrayRef(padding)))
                                .bias(with_bias)),
      padding_(std::move(padding)) {}

std::shared_ptr<torch::nn::Module> OneDnnConv3dImpl::clone(const torch::optional<torch::Device>& device) const {
  // Conv3d's deep copy of options, weight and bias, assigned into a copy that keeps padding_: what
  // Cloneable::clone_ does when a parent clones this module in place.
  auto copy = std::make_shared<OneDnnConv3dImpl>(*this);
  static_cast<torch::nn::Conv3dImpl&>(*copy) =
      *std::dynamic_pointer_cast<torch::nn::Conv3dImpl>(torch::nn::Conv3dImpl::clone(device));
  return copy;
}

torch::Tensor OneDnnConv3dImpl::forward(const torch::Tensor& input) {
  const at::IntArrayRef stride = *options.stride();
  if (torch_dispatch_ || !onednn_conv3d_applies(input, weight, stride, padding_))
    return torch::nn::Conv3dImpl::forward(input);
  return onednn_conv3d(input, weight, bias, stride, padding_);
}

void use_torch_conv_dispatch(torch::nn::Module& net, bool on) {
  for (const auto& m : net.modules(/*include_self=*/true))
    if (auto* c = dynamic_cast<OneDnnConv3dImpl*>(m.get())) c->set_torch_dispatch(on);
}

}  // namespace medseg::models
