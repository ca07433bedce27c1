#include "models/layers.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/pooling.h>

#include <unordered_set>

#include "core/error.h"
#include "models/channels_last_norm.h"
#include "models/onednn_conv.h"
#include "models/spatial_shard.h"

namespace medseg::models {
namespace {

void check_dims(int dims) { MEDSEG_CHECK(dims == 2 || dims == 3, "network: spatial dims must be 2 or 3, got ", dims); }

template <size_t D>
torch::ExpandingArray<D> arr(const Shape& v) {
  return torch::ExpandingArray<D>(at::IntArrayRef(v));
}

template <size_t D, class ConvOpt>
ConvOpt conv_options(int64_t in, int64_t out, const Shape& k, const Shape& s, bool bias) {
  return ConvOpt(in, out, arr<D>(k)).stride(arr<D>(s)).padding(arr<D>(same_padding(k))).bias(bias);
}

}  // namespace

Shape same_padding(const Shape& k) {
  Shape pad(k.size());
  for (size_t i = 0; i < k.size(); ++i) pad[i] = (k[i] - 1) / 2;
  return pad;
}

Shape per_axis(const Shape& v, int dims, const std::string& what) {
  if (v.size() == 1) return Shape(dims, v[0]);
  MEDSEG_CHECK(static_cast<int>(v.size()) == dims, "network: ", what, " has ", v.size(), " entries, expected 1 or ",
               dims);
  return v;
}

torch::nn::AnyModule make_conv(int dims, int64_t in, int64_t out, const Shape& kernel, const Shape& stride, bool bias) {
  check_dims(dims);
  const Shape k = per_axis(kernel, dims, "kernel size"), s = per_axis(stride, dims, "stride");
  if (dims == 3) return torch::nn::AnyModule(OneDnnConv3d(in, out, k, s, same_padding(k), bias));
  return torch::nn::AnyModule(torch::nn::Conv2d(conv_options<2, torch::nn::Conv2dOptions>(in, out, k, s, bias)));
}

torch::nn::AnyModule make_conv_transpose(int dims, int64_t in, int64_t out, const Shape& kernel_and_stride, bool bias) {
  check_dims(dims);
  const Shape k = per_axis(kernel_and_stride, dims, "transposed conv stride");
  if (dims == 3)
    return torch::nn::AnyModule(
        torch::nn::ConvTranspose3d(torch::nn::ConvTranspose3dOptions(in, out, arr<3>(k)).stride(arr<3>(k)).bias(bias)));
  return torch::nn::AnyModule(
      torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(in, out, arr<2>(k)).stride(arr<2>(k)).bias(bias)));
}

torch::nn::AnyModule make_norm(int dims, NormKind kind, int64_t channels, double eps, bool affine) {
  check_dims(dims);
  switch (kind) {
    case NormKind::kInstance:
      return torch::nn::AnyModule(InstanceNorm(InstanceNormOptions(channels).eps(eps).affine(affine)));
    case NormKind::kBatch:
      if (dims == 3)
        return torch::nn::AnyModule(
            torch::nn::BatchNorm3d(torch::nn::BatchNorm3dOptions(channels).eps(eps).affine(affine)));
      return torch::nn::AnyModule(
          torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(channels).eps(eps).affine(affine)));
    case NormKind::kNone: break;
  }
  throw Error("network: make_norm called without a norm op");
}

InstanceNormImpl::InstanceNormImpl(InstanceNormOptions options_) : options(options_) { reset(); }

void InstanceNormImpl::reset() {
  weight = bias = torch::Tensor();
  if (options.affine()) {
    weight = register_parameter("weight", torch::ones({options.num_features()}));
    bias = register_parameter("bias", torch::zeros({options.num_features()}));
  }
}

void InstanceNormImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::InstanceNorm(" << options.num_features() << ", eps=" << options.eps()
         << ", affine=" << (options.affine() ? "true" : "false") << ")";
}

torch::Tensor InstanceNormImpl::forward(const torch::Tensor& x) {
  if (shard_ && shard_->active()) return sharded_instance_norm(x, weight, bias, options.eps(), *shard_);
  // A channels-last activation (prediction in channels-last): normalised where it lies, not copied.
  if (channels_last_norm_applies(x, weight)) return channels_last_instance_norm(x, weight, bias, options.eps());
  // What at::instance_norm does, up to its last step.
  const int64_t b = x.size(0);
  std::vector<int64_t> flat = x.sizes().vec();
  flat[1] *= b;
  flat[0] = 1;
  const torch::Tensor w = weight.defined() ? weight.repeat({b}) : torch::Tensor();
  const torch::Tensor bi = bias.defined() ? bias.repeat({b}) : torch::Tensor();
  const torch::Tensor y =
      at::batch_norm(x.contiguous().view(flat), w, bi, /*running_mean=*/{}, /*running_var=*/{},
                     /*training=*/true, /*momentum=*/0.0, options.eps(), at::globalContext().userEnabledCuDNN());
  // _unsafe_view: same storage, but not an autograd view (as matmul returns its result). Nothing
  // saved for backward refers to y (batch norm keeps its input and statistics), so in-place ops on
  // the result are safe.
  return at::_unsafe_view(y, x.sizes());
}

torch::nn::AnyModule make_nonlin(NonlinKind kind, double negative_slope, bool inplace) {
  if (kind == NonlinKind::kLeakyReLU)
    return torch::nn::AnyModule(
        torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(negative_slope).inplace(inplace)));
  if (kind == NonlinKind::kReLU) return torch::nn::AnyModule(torch::nn::ReLU(torch::nn::ReLUOptions(inplace)));
  throw Error("network: make_nonlin called without a nonlinearity");
}

torch::nn::AnyModule make_dropout(int dims, double p) {
  check_dims(dims);
  if (dims == 3) return torch::nn::AnyModule(torch::nn::Dropout3d(torch::nn::Dropout3dOptions(p)));
  return torch::nn::AnyModule(torch::nn::Dropout2d(torch::nn::Dropout2dOptions(p)));
}

torch::nn::AnyModule make_avg_pool(int dims, const Shape& kernel_and_stride) {
  check_dims(dims);
  const Shape k = per_axis(kernel_and_stride, dims, "pool size");
  if (dims == 3)
    return torch::nn::AnyModule(torch::nn::AvgPool3d(torch::nn::AvgPool3dOptions(arr<3>(k)).stride(arr<3>(k))));
  return torch::nn::AnyModule(torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(arr<2>(k)).stride(arr<2>(k))));
}

void print_shape(std::ostream& out, const std::vector<int64_t>& v) {
  out << "[";
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << "]";
}

void print_layer_options(std::ostream& out, const LayerOptions& o) {
  out << "conv_bias=" << (o.conv_bias() ? "true" : "false") << ", norm=";
  if (o.norm() == NormKind::kNone)
    out << "none";
  else
    out << (o.norm() == NormKind::kInstance ? "instance" : "batch") << "(eps=" << o.norm_eps()
        << ", affine=" << (o.norm_affine() ? "true" : "false") << ")";
  out << ", dropout=" << o.dropout_p() << ", nonlin=";
  if (o.nonlin() == NonlinKind::kNone)
    out << "none";
  else if (o.nonlin() == NonlinKind::kReLU)
    out << "relu";
  else
    out << "leaky_relu(" << o.negative_slope() << ")";
  out << ", inplace=" << (o.inplace() ? "true" : "false");
}

void he_init(torch::nn::Module& root, double neg_slope) {
  torch::NoGradGuard no_grad;
  auto init = [&](torch::Tensor& w, torch::Tensor& b) {
    torch::nn::init::kaiming_normal_(w, neg_slope);
    if (b.defined()) b.zero_();
  };
  // include_self=false: called from constructors, before a shared_ptr owns the root.
  for (auto& m : root.modules(/*include_self=*/false)) {
    if (auto* c = m->as<torch::nn::Conv3d>())
      init(c->weight, c->bias);
    else if (auto* c2 = m->as<torch::nn::Conv2d>())
      init(c2->weight, c2->bias);
    else if (auto* t3 = m->as<torch::nn::ConvTranspose3d>())
      init(t3->weight, t3->bias);
    else if (auto* t2 = m->as<torch::nn::ConvTranspose2d>())
      init(t2->weight, t2->bias);
  }
}

int64_t unique_parameter_count(const torch::nn::Module& m) {
  std::unordered_set<const void*> seen;
  int64_t n = 0;
  for (const auto& p : m.parameters(/*recurse=*/true)) {
    if (!p.requires_grad()) continue;
    if (!seen.insert(p.unsafeGetTensorImpl()).second) continue;
    n += p.numel();
  }
  return n;
}

}  // namespace medseg::models
