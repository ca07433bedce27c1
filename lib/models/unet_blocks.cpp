#include "models/unet_blocks.h"

#include "core/error.h"
#include "models/spatial_shard.h"

namespace medseg::models {

namespace {

// The stages' stacks (StackedConvBlocks, StackedResidualBlocks): `n` blocks of one kind, the first taking the
// stage's input channels and stride, the others out_channels and stride 1.
template <class Block, class BlockOpts, class StackOpts>
torch::nn::Sequential stack_blocks(const StackOpts& o, int64_t n) {
  torch::nn::Sequential seq;
  for (int64_t i = 0; i < n; ++i)
    seq->push_back(
        Block(BlockOpts(i == 0 ? o.in_channels() : o.out_channels(), o.out_channels(), o.kernel_size(), o.layers())
                  .stride(i == 0 ? o.initial_stride() : Shape{1})));
  return seq;
}

template <class StackOpts>
void print_stack(std::ostream& stream, const char* name, const char* count_key, int64_t count, const StackOpts& o) {
  stream << "medseg::models::" << name << "(" << o.in_channels() << ", " << o.out_channels() << ", " << count_key << "="
         << count << ", kernel_size=";
  print_shape(stream, o.kernel_size());
  stream << ", initial_stride=";
  print_shape(stream, o.initial_stride());
  stream << ", ";
  print_layer_options(stream, o.layers());
  stream << ")";
}

// Block by block instead of Sequential::forward, which holds each block's input until the block returns: handed
// over, the input goes once the block's conv has read it, one activation less at the peak (the full-resolution
// stages of a large tile are hundreds of MB each).
template <class BlockImpl>
torch::Tensor forward_handing_over(torch::nn::Sequential& seq, torch::Tensor x) {
  for (auto& block : *seq) x = block.ptr<BlockImpl>()->forward(std::move(x));
  return x;
}

}  // namespace

ConvDropoutNormReLUImpl::ConvDropoutNormReLUImpl(ConvDropoutNormReLUOptions options_) : options(std::move(options_)) {
  reset();
}

void ConvDropoutNormReLUImpl::reset() {
  const LayerOptions& l = options.layers();
  conv_ = make_conv(l.dims(), options.in_channels(), options.out_channels(), options.kernel_size(), options.stride(),
                    l.conv_bias());
  register_module("conv", conv_.ptr());
  dropout_ = {};
  if (options.with_dropout() && l.dropout_p() > 0) {
    dropout_ = make_dropout(l.dims(), l.dropout_p());
    register_module("dropout", dropout_.ptr());
  }
  norm_ = {};
  if (l.norm() != NormKind::kNone) {
    norm_ = make_norm(l.dims(), l.norm(), options.out_channels(), l.norm_eps(), l.norm_affine());
    register_module("norm", norm_.ptr());
  }
  nonlin_ = {};
  if (options.with_nonlin() && l.nonlin() != NonlinKind::kNone) {
    nonlin_ = make_nonlin(l.nonlin(), l.negative_slope(), l.inplace());
    register_module("nonlin", nonlin_.ptr());
  }
}

void ConvDropoutNormReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::ConvDropoutNormReLU(" << options.in_channels() << ", " << options.out_channels()
         << ", kernel_size=";
  print_shape(stream, options.kernel_size());
  stream << ", stride=";
  print_shape(stream, options.stride());
  stream << ", ";
  LayerOptions shown = options.layers();
  if (!options.with_dropout()) shown.dropout_p(0.0);
  if (!options.with_nonlin()) shown.nonlin(NonlinKind::kNone);
  print_layer_options(stream, shown);
  stream << ")";
}

void ConvDropoutNormReLUImpl::set_spatial_shard(std::optional<distributed::SpatialShard> shard) {
  MEDSEG_CHECK(!shard || !shard->active() || options.layers().norm() != NormKind::kBatch,
               "network: batch norm has no spatially sharded forward (use instance norm)");
  MEDSEG_CHECK(!shard || (shard->axis >= 0 && shard->axis < options.layers().dims()), "network: spatial shard axis ",
               shard ? shard->axis : 0, " is not an axis of a ", options.layers().dims(), "-D network");
  shard_ = shard;
  if (!norm_.is_empty())
    if (auto* in = norm_.ptr()->as<InstanceNormImpl>()) in->set_spatial_shard(shard);
}

torch::Tensor ConvDropoutNormReLUImpl::sharded_conv_forward(const torch::Tensor& x) const {
  // The module's own parameters, run functionally: names and checkpoints stay those of the conv.
  const auto params = conv_.ptr()->named_parameters(false);
  const auto* w = params.find("weight");
  const auto* b = params.find("bias");
  const int dims = options.layers().dims();
  const Shape padding = same_padding(per_axis(options.kernel_size(), dims, "kernel size"));
  return sharded_conv(x, *w, b ? *b : torch::Tensor(), per_axis(options.stride(), dims, "stride"), padding, *shard_);
}

torch::Tensor ConvDropoutNormReLUImpl::forward(torch::Tensor x) {
  x = shard_ && shard_->active() ? sharded_conv_forward(x) : conv_.forward(x);
  if (!dropout_.is_empty()) x = dropout_.forward(x);
  if (!norm_.is_empty()) x = norm_.forward(x);
  if (!nonlin_.is_empty()) x = nonlin_.forward(x);
  return x;
}

torch::Tensor ConvDropoutNormReLUImpl::norm_weight() const {
  if (norm_.is_empty()) return {};
  // named_parameters() returns a new dict: find() points into it, so it must outlive the lookup.
  const auto params = norm_.ptr()->named_parameters(false);
  const auto* p = params.find("weight");
  return p ? *p : torch::Tensor();
}

torch::Tensor ConvDropoutNormReLUImpl::norm_bias() const {
  if (norm_.is_empty()) return {};
  // named_parameters() returns a new dict: find() points into it, so it must outlive the lookup.
  const auto params = norm_.ptr()->named_parameters(false);
  const auto* p = params.find("bias");
  return p ? *p : torch::Tensor();
}

StackedConvBlocksImpl::StackedConvBlocksImpl(StackedConvBlocksOptions options_) : options(std::move(options_)) {
  reset();
}

torch::Tensor StackedConvBlocksImpl::forward(torch::Tensor x) {
  return forward_handing_over<ConvDropoutNormReLUImpl>(convs_, std::move(x));
}

void StackedConvBlocksImpl::reset() {
  convs_ = stack_blocks<ConvDropoutNormReLU, ConvDropoutNormReLUOptions>(options, options.num_convs());
  register_module("convs", convs_);
}

void StackedConvBlocksImpl::pretty_print(std::ostream& stream) const {
  print_stack(stream, "StackedConvBlocks", "num_convs", options.num_convs(), options);
}

BasicBlockDImpl::BasicBlockDImpl(BasicBlockDOptions options_) : options(std::move(options_)) { reset(); }

void BasicBlockDImpl::reset() {
  const LayerOptions& l = options.layers();
  const int64_t in = options.in_channels(), out = options.out_channels();
  conv1_ = register_module(
      "conv1",
      ConvDropoutNormReLU(ConvDropoutNormReLUOptions(in, out, options.kernel_size(), l).stride(options.stride())));
  conv2_ = register_module(
      "conv2",
      ConvDropoutNormReLU(
          ConvDropoutNormReLUOptions(out, out, options.kernel_size(), l).with_dropout(false).with_nonlin(false)));
  nonlin2_ = {};
  if (l.nonlin() != NonlinKind::kNone) {
    nonlin2_ = make_nonlin(l.nonlin(), l.negative_slope(), l.inplace());
    register_module("nonlin2", nonlin2_.ptr());
  }
  bool strided = false;
  for (int64_t s : options.stride()) strided |= s != 1;
  skip_ = nullptr;
  if (strided || in != out) {
    skip_ = torch::nn::Sequential();
    if (strided) skip_->push_back(make_avg_pool(l.dims(), options.stride()));
    if (in != out) {
      LayerOptions projection = l;
      projection.conv_bias(false);
      skip_->push_back(ConvDropoutNormReLU(
          ConvDropoutNormReLUOptions(in, out, Shape{1}, projection).with_dropout(false).with_nonlin(false)));
    }
    register_module("skip", skip_);
  }
}

void BasicBlockDImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::BasicBlockD(" << options.in_channels() << ", " << options.out_channels()
         << ", kernel_size=";
  print_shape(stream, options.kernel_size());
  stream << ", stride=";
  print_shape(stream, options.stride());
  stream << ", ";
  print_layer_options(stream, options.layers());
  stream << ")";
}

torch::Tensor BasicBlockDImpl::forward(torch::Tensor x) {
  torch::Tensor residual = skip_ ? skip_->forward(x) : x;
  torch::Tensor out = conv2_->forward(conv1_->forward(x));
  out = options.layers().inplace() ? out.add_(residual) : out + residual;
  return nonlin2_.is_empty() ? out : nonlin2_.forward(out);
}

void BasicBlockDImpl::zero_last_norm() {
  torch::NoGradGuard no_grad;
  if (auto w = conv2_->norm_weight(); w.defined()) w.zero_();
  if (auto b = conv2_->norm_bias(); b.defined()) b.zero_();
}

StackedResidualBlocksImpl::StackedResidualBlocksImpl(StackedResidualBlocksOptions options_)
    : options(std::move(options_)) {
  reset();
}

torch::Tensor StackedResidualBlocksImpl::forward(torch::Tensor x) {
  return forward_handing_over<BasicBlockDImpl>(blocks_, std::move(x));
}

void StackedResidualBlocksImpl::reset() {
  blocks_ = stack_blocks<BasicBlockD, BasicBlockDOptions>(options, options.n_blocks());
  register_module("blocks", blocks_);
}

void StackedResidualBlocksImpl::pretty_print(std::ostream& stream) const {
  print_stack(stream, "StackedResidualBlocks", "n_blocks", options.n_blocks(), options);
}

void shard_conv_blocks(torch::nn::Module& root, const std::optional<distributed::SpatialShard>& shard) {
  std::vector<ConvDropoutNormReLUImpl*> blocks;
  for (const auto& m : root.modules(/*include_self=*/true))
    if (auto* block = m->as<ConvDropoutNormReLUImpl>()) blocks.push_back(block);
  // A refusal (batch norm, an axis the network does not have) is the same for every block: the
  // first block's answer decides before any block changes.
  if (!blocks.empty()) blocks.front()->set_spatial_shard(shard);
  for (auto* block : blocks) block->set_spatial_shard(shard);
}

void StackedResidualBlocksImpl::zero_last_norms() {
  for (const auto& block : blocks_->children()) block->as<BasicBlockDImpl>()->zero_last_norm();
}

}  // namespace medseg::models
