#include "models/unet_blocks.h"

#include <torch/nn/modules/batchnorm.h>

namespace medseg::models {

ConvDropoutNormReLUImpl::ConvDropoutNormReLUImpl(const LayerConfig& cfg, int64_t in, int64_t out, const Shape& kernel,
                                                 const Shape& stride, bool conv_bias, bool with_dropout,
                                                 bool with_nonlin) {
  conv_ = make_conv(cfg.dims, in, out, kernel, stride, conv_bias);
  register_module("conv", conv_.ptr());
  if (with_dropout && cfg.dropout_p > 0) {
    dropout_ = make_dropout(cfg.dims, cfg.dropout_p);
    register_module("dropout", dropout_.ptr());
  }
  if (cfg.norm != NormKind::kNone) {
    norm_ = make_norm(cfg.dims, cfg.norm, out, cfg.norm_eps, cfg.norm_affine);
    norm_ptr_ = register_module("norm", norm_.ptr());
  }
  if (with_nonlin && cfg.nonlin != NonlinKind::kNone) {
    nonlin_ = make_nonlin(cfg.nonlin, cfg.negative_slope, cfg.inplace);
    register_module("nonlin", nonlin_.ptr());
  }
}

torch::Tensor ConvDropoutNormReLUImpl::forward(torch::Tensor x) {
  x = conv_.forward(x);
  if (!dropout_.is_empty()) x = dropout_.forward(x);
  if (!norm_.is_empty()) x = norm_.forward(x);
  if (!nonlin_.is_empty()) x = nonlin_.forward(x);
  return x;
}

torch::Tensor ConvDropoutNormReLUImpl::norm_weight() const {
  if (!norm_ptr_) return {};
  auto* p = norm_ptr_->named_parameters(false).find("weight");
  return p ? *p : torch::Tensor();
}

torch::Tensor ConvDropoutNormReLUImpl::norm_bias() const {
  if (!norm_ptr_) return {};
  auto* p = norm_ptr_->named_parameters(false).find("bias");
  return p ? *p : torch::Tensor();
}

StackedConvBlocksImpl::StackedConvBlocksImpl(const LayerConfig& cfg, int64_t num_convs, int64_t in, int64_t out,
                                             const Shape& kernel, const Shape& initial_stride) {
  for (int64_t i = 0; i < num_convs; ++i) {
    const Shape stride = i == 0 ? initial_stride : Shape{1};
    convs_->push_back(ConvDropoutNormReLU(cfg, i == 0 ? in : out, out, kernel, stride, cfg.conv_bias, true, true));
  }
  register_module("convs", convs_);
}

torch::Tensor StackedConvBlocksImpl::forward(torch::Tensor x) { return convs_->forward(x); }

BasicBlockDImpl::BasicBlockDImpl(const LayerConfig& cfg, int64_t in, int64_t out, const Shape& kernel,
                                 const Shape& stride)
    : inplace_(cfg.inplace) {
  conv1_ = register_module("conv1", ConvDropoutNormReLU(cfg, in, out, kernel, stride, cfg.conv_bias, true, true));
  conv2_ = register_module("conv2", ConvDropoutNormReLU(cfg, out, out, kernel, Shape{1}, cfg.conv_bias, false, false));
  if (cfg.nonlin != NonlinKind::kNone) {
    nonlin2_ = make_nonlin(cfg.nonlin, cfg.negative_slope, cfg.inplace);
    register_module("nonlin2", nonlin2_.ptr());
  }
  bool strided = false;
  for (int64_t s : stride) strided |= s != 1;
  if (strided || in != out) {
    skip_ = torch::nn::Sequential();
    if (strided) skip_->push_back(make_avg_pool(cfg.dims, stride));
    if (in != out) skip_->push_back(ConvDropoutNormReLU(cfg, in, out, Shape{1}, Shape{1}, /*conv_bias=*/false, false, false));
    register_module("skip", skip_);
  }
}

torch::Tensor BasicBlockDImpl::forward(torch::Tensor x) {
  torch::Tensor residual = skip_ ? skip_->forward(x) : x;
  torch::Tensor out = conv2_->forward(conv1_->forward(x));
  out = inplace_ ? out.add_(residual) : out + residual;
  return nonlin2_.is_empty() ? out : nonlin2_.forward(out);
}

void BasicBlockDImpl::zero_last_norm() {
  torch::NoGradGuard no_grad;
  if (auto w = conv2_->norm_weight(); w.defined()) w.zero_();
  if (auto b = conv2_->norm_bias(); b.defined()) b.zero_();
}

StackedResidualBlocksImpl::StackedResidualBlocksImpl(const LayerConfig& cfg, int64_t n_blocks, int64_t in,
                                                     int64_t out, const Shape& kernel, const Shape& initial_stride) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    BasicBlockD b(cfg, i == 0 ? in : out, out, kernel, i == 0 ? initial_stride : Shape{1});
    blocks_->push_back(b);
    block_list_.push_back(b);
  }
  register_module("blocks", blocks_);
}

torch::Tensor StackedResidualBlocksImpl::forward(torch::Tensor x) { return blocks_->forward(x); }

void StackedResidualBlocksImpl::zero_last_norms() {
  for (auto& b : block_list_) b->zero_last_norm();
}

}  // namespace medseg::models
