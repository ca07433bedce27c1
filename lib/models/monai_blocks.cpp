#include "models/monai_blocks.h"

namespace medseg::models {
namespace {

NamedConv monai_conv(int dims, int64_t in, int64_t out, int64_t kernel) {
  return NamedConv(NamedConvOptions("conv", dims, in, out, {kernel}));
}

void print_block(std::ostream& stream, const char* name, const UnetrBlockOptions& o, bool with_inplace = true) {
  stream << "medseg::models::" << name << "(" << o.in_channels() << ", " << o.out_channels()
         << ", spatial_dims=" << o.spatial_dims();
  if (with_inplace) stream << ", inplace=" << (o.inplace() ? "true" : "false");
  stream << ")";
}

}  // namespace

NamedConvImpl::NamedConvImpl(NamedConvOptions options_) : options(std::move(options_)) { reset(); }

void NamedConvImpl::reset() {
  const NamedConvOptions& o = options;
  conv_ = o.transposed()
              ? make_conv_transpose(o.dims(), o.in_channels(), o.out_channels(), o.kernel_size(), o.bias())
              : make_conv(o.dims(), o.in_channels(), o.out_channels(), o.kernel_size(), o.stride(), o.bias());
  register_module(o.name(), conv_.ptr());
}

void NamedConvImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::NamedConv(" << options.name() << ": " << options.in_channels() << ", "
         << options.out_channels() << ", kernel_size=";
  print_shape(stream, options.kernel_size());
  if (!options.transposed()) {
    stream << ", stride=";
    print_shape(stream, options.stride());
  }
  stream << ", bias=" << (options.bias() ? "true" : "false") << (options.transposed() ? ", transposed" : "") << ")";
}

UnetResBlockImpl::UnetResBlockImpl(UnetrBlockOptions options_) : options(options_) { reset(); }

void UnetResBlockImpl::reset() {
  const int dims = options.spatial_dims();
  const int64_t in = options.in_channels(), out = options.out_channels();
  conv1_ = register_module("conv1", monai_conv(dims, in, out, 3));
  conv2_ = register_module("conv2", monai_conv(dims, out, out, 3));
  lrelu_ = make_nonlin(NonlinKind::kLeakyReLU, 0.01, options.inplace());
  register_module("lrelu", lrelu_.ptr());
  norm1_ = make_norm(dims, NormKind::kInstance, out, 1e-5, false);
  norm2_ = make_norm(dims, NormKind::kInstance, out, 1e-5, false);
  register_module("norm1", norm1_.ptr());
  register_module("norm2", norm2_.ptr());
  conv3_ = nullptr;
  norm3_ = {};
  if (in != out) {
    conv3_ = register_module("conv3", monai_conv(dims, in, out, 1));
    norm3_ = make_norm(dims, NormKind::kInstance, out, 1e-5, false);
    register_module("norm3", norm3_.ptr());
  }
}

void UnetResBlockImpl::pretty_print(std::ostream& stream) const { print_block(stream, "UnetResBlock", options); }

torch::Tensor UnetResBlockImpl::forward(torch::Tensor x) {
  torch::Tensor out = lrelu_.forward(norm1_.forward(conv1_->forward(x)));
  out = norm2_.forward(conv2_->forward(out));
  torch::Tensor residual = conv3_ ? norm3_.forward(conv3_->forward(x)) : x;
  out = options.inplace() ? out.add_(residual) : out + residual;
  return lrelu_.forward(out);
}

UnetrBasicBlockImpl::UnetrBasicBlockImpl(UnetrBlockOptions options_) : options(options_) { reset(); }

void UnetrBasicBlockImpl::reset() { layer_ = register_module("layer", UnetResBlock(options)); }

void UnetrBasicBlockImpl::pretty_print(std::ostream& stream) const { print_block(stream, "UnetrBasicBlock", options); }

UnetrUpBlockImpl::UnetrUpBlockImpl(UnetrBlockOptions options_) : options(options_) { reset(); }

void UnetrUpBlockImpl::reset() {
  const int dims = options.spatial_dims();
  const int64_t out = options.out_channels();
  transp_conv_ = register_module(
      "transp_conv", NamedConv(NamedConvOptions("conv", dims, options.in_channels(), out, {2}).transposed(true)));
  conv_block_ =
      register_module("conv_block", UnetResBlock(UnetrBlockOptions(dims, 2 * out, out).inplace(options.inplace())));
}

void UnetrUpBlockImpl::pretty_print(std::ostream& stream) const { print_block(stream, "UnetrUpBlock", options); }

torch::Tensor UnetrUpBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& skip) {
  return conv_block_->forward(torch::cat({transp_conv_->forward(x), skip}, 1));
}

UnetOutBlockImpl::UnetOutBlockImpl(UnetrBlockOptions options_) : options(options_) { reset(); }

void UnetOutBlockImpl::reset() {
  conv_ = register_module("conv", NamedConv(NamedConvOptions("conv", options.spatial_dims(), options.in_channels(),
                                                             options.out_channels(), {1})
                                                .bias(true)));
}

void UnetOutBlockImpl::pretty_print(std::ostream& stream) const { print_block(stream, "UnetOutBlock", options, false); }

}  // namespace medseg::models
