#include "models/unet.h"

#include "core/error.h"
#include "models/activation_checkpoint.h"
#include "models/spatial_shard.h"

namespace medseg::models {

LayerOptions UNetOptions::layer_options() const {
  return LayerOptions()
      .dims(spatial_dims_)
      .conv_bias(conv_bias_)
      .norm(norm_)
      .norm_eps(norm_eps_)
      .norm_affine(norm_affine_)
      .dropout_p(dropout_p_)
      .nonlin(nonlin_)
      .negative_slope(negative_slope_)
      .inplace(inplace_);
}

namespace {
void print_list(std::ostream& out, const char* name, const std::vector<int64_t>& v) {
  out << ", " << name << "=";
  print_shape(out, v);
}
void print_shapes(std::ostream& out, const char* name, const std::vector<Shape>& v) {
  out << ", " << name << "=[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out << ", ";
    print_shape(out, v[i]);
  }
  out << "]";
}
}  // namespace

void print_unet_options(std::ostream& out, const UNetOptions& o) {
  out << "in_channels=" << o.input_channels() << ", num_classes=" << o.num_classes();
  print_list(out, "features_per_stage", o.features_per_stage());
  print_shapes(out, "kernel_sizes", o.kernel_sizes());
  print_shapes(out, "strides", o.strides());
  if (!o.n_conv_per_stage().empty()) print_list(out, "n_conv_per_stage", o.n_conv_per_stage());
  if (!o.n_blocks_per_stage().empty()) print_list(out, "n_blocks_per_stage", o.n_blocks_per_stage());
  print_list(out, "n_conv_per_stage_decoder", o.n_conv_per_stage_decoder());
  out << ", ";
  print_layer_options(out, o.layer_options());
  out << ", deep_supervision=" << (o.deep_supervision() ? "true" : "false")
      << ", checkpoint_encoder=" << (o.checkpoint_encoder() ? "true" : "false");
}

void UNetOptions::validate(const std::string& blocks_key) const {
  const size_t n = features_per_stage_.size();
  auto need = [&](size_t got, size_t want, const std::string& key) {
    MEDSEG_CHECK(got == want, "network: arch_kwargs.", key, " has ", got, " entries, expected ", want,
                 " (n_stages = ", n, ")");
  };
  MEDSEG_CHECK(n >= 2, "network: a U-Net needs at least 2 stages");
  MEDSEG_CHECK(spatial_dims_ == 2 || spatial_dims_ == 3, "network: spatial dims must be 2 or 3");
  need(kernel_sizes_.size(), n, "kernel_sizes");
  need(strides_.size(), n, "strides");
  need(blocks_key == "n_conv_per_stage" ? n_conv_per_stage_.size() : n_blocks_per_stage_.size(), n, blocks_key);
  need(n_conv_per_stage_decoder_.size(), n - 1, "n_conv_per_stage_decoder");
  for (size_t s = 0; s < n; ++s) {
    per_axis(kernel_sizes_[s], spatial_dims_, concat("kernel_sizes[", s, "]"));
    per_axis(strides_[s], spatial_dims_, concat("strides[", s, "]"));
  }
  MEDSEG_CHECK(input_channels_ >= 1 && num_classes_ >= 1, "network: input channels and classes must be >= 1");
}

UNetEncoderImpl::UNetEncoderImpl(UNetEncoderOptions options_) : options(std::move(options_)) { reset(); }

void UNetEncoderImpl::reset() {
  const UNetOptions& o = options.unet();
  const LayerOptions layers = o.layer_options();
  const auto& f = o.features_per_stage();
  int64_t in = o.input_channels();
  stem_ = nullptr;
  if (options.residual()) {
    stem_ = register_module("stem", StackedConvBlocks(StackedConvBlocksOptions(in, f[0], o.kernel_sizes()[0], layers)));
    in = f[0];
  }
  stages_ = torch::nn::ModuleList();
  for (int64_t s = 0; s < o.n_stages(); ++s) {
    const Shape& k = o.kernel_sizes()[s];
    const Shape& st = o.strides()[s];
    if (options.residual()) {
      stages_->push_back(StackedResidualBlocks(
          StackedResidualBlocksOptions(in, f[s], k, layers).n_blocks(o.n_blocks_per_stage()[s]).initial_stride(st)));
    } else {
      // PlainConvEncoder wraps each stage's StackedConvBlocks in an nn.Sequential: keys stages.<s>.0.convs.*
      stages_->push_back(torch::nn::Sequential(StackedConvBlocks(
          StackedConvBlocksOptions(in, f[s], k, layers).num_convs(o.n_conv_per_stage()[s]).initial_stride(st))));
    }
    in = f[s];
  }
  register_module("stages", stages_);
}

void UNetEncoderImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::" << (options.residual() ? "ResidualEncoder(" : "PlainConvEncoder(");
  print_unet_options(stream, options.unet());
  stream << ")";
}

std::vector<torch::Tensor> UNetEncoderImpl::forward(torch::Tensor x) {
  if (stem_) x = stem_->forward(x);
  std::vector<torch::Tensor> skips;
  skips.reserve(stages_->size());
  const bool ckpt = options.unet().checkpoint_encoder() && is_training();
  for (size_t s = 0; s < stages_->size(); ++s) {
    const auto run = stage_fn(s);
    x = ckpt ? activation_checkpoint(run, x, *stages_[s]) : run(x);
    skips.push_back(x);
  }
  return skips;
}

std::function<torch::Tensor(const torch::Tensor&)> UNetEncoderImpl::stage_fn(size_t s) const {
  // The closure owns its stage: a checkpointed stage runs again in backward.
  if (options.residual())
    return [m = stages_->ptr<StackedResidualBlocksImpl>(s)](const torch::Tensor& t) { return m->forward(t); };
  return [m = stages_->ptr<torch::nn::SequentialImpl>(s)](const torch::Tensor& t) { return m->forward(t); };
}

void UNetEncoderImpl::zero_last_norms() {
  if (!options.residual()) return;
  for (const auto& stage : stages_->children()) stage->as<StackedResidualBlocksImpl>()->zero_last_norms();
}

UNetDecoderImpl::UNetDecoderImpl(UNetOptions options_) : options(std::move(options_)) { reset(); }

void UNetDecoderImpl::reset() {
  const LayerOptions layers = options.layer_options();
  const auto& f = options.features_per_stage();
  const int64_t n = options.n_stages();
  stages_ = torch::nn::ModuleList();
  transpconvs_ = torch::nn::Sequential();
  seg_layers_ = torch::nn::Sequential();
  for (int64_t s = 1; s < n; ++s) {
    const int64_t below = f[n - s], skip = f[n - s - 1];
    transpconvs_->push_back(
        make_conv_transpose(layers.dims(), below, skip, options.strides()[n - s], layers.conv_bias()));
    stages_->push_back(
        StackedConvBlocks(StackedConvBlocksOptions(2 * skip, skip, options.kernel_sizes()[n - s - 1], layers)
                              .num_convs(options.n_conv_per_stage_decoder()[s - 1])));
    // Heads for every scale are always built so that weights load with deep supervision on or off.
    seg_layers_->push_back(make_conv(layers.dims(), skip, options.num_classes(), {1}, {1}, /*bias=*/true));
  }
  register_module("stages", stages_);
  register_module("transpconvs", transpconvs_);
  register_module("seg_layers", seg_layers_);
}

void UNetDecoderImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::UNetDecoder(";
  print_unet_options(stream, options);
  stream << ")";
}

// `skips` by value: each skip is let go once concatenated, and each stage's input once its first conv has read it,
// so the full-resolution skip and concatenation are not kept through the last stage (nnU-Net keeps both).
std::vector<torch::Tensor> UNetDecoderImpl::forward(std::vector<torch::Tensor> skips) {
  const size_t n = stages_->size();
  MEDSEG_CHECK(skips.size() == n + 1, "network: decoder expects one skip per encoder stage");
  torch::Tensor x = std::move(skips.back());
  std::vector<torch::Tensor> outs;
  for (size_t s = 0; s < n; ++s) {
    x = transpconvs_->begin()[s].forward(x);
    torch::Tensor& skip = skips[skips.size() - s - 2];
    x = torch::cat({x, skip}, 1);
    skip = torch::Tensor();
    x = stages_->at<StackedConvBlocksImpl>(s).forward(std::move(x));
    if (options.deep_supervision() || s == n - 1) outs.push_back(seg_layers_->begin()[s].forward(x));
  }
  std::reverse(outs.begin(), outs.end());
  return outs;
}

UNetBaseImpl::UNetBaseImpl(UNetOptions options_, bool residual) : options(std::move(options_)), residual_(residual) {
  reset();
}

void UNetBaseImpl::reset() {
  options.validate(residual_ ? "n_blocks_per_stage" : "n_conv_per_stage");
  encoder_ = register_module("encoder", UNetEncoder(UNetEncoderOptions(options).residual(residual_)));
  decoder_ = register_module("decoder", UNetDecoder(options));
  if (options.init_weights()) {
    he_init(*this, 1e-2);
    encoder_->zero_last_norms();
  }
}

void UNetBaseImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::" << class_name() << "(";
  print_unet_options(stream, options);
  stream << ")";
}

void UNetBaseImpl::set_deep_supervision(bool on) {
  options.deep_supervision(on);
  decoder_->options.deep_supervision(on);
}

void UNetBaseImpl::set_spatial_shard(std::optional<distributed::SpatialShard> shard) {
  // Blocks first: one that refuses (batch norm, a bad axis) leaves no half-sharded network behind.
  shard_conv_blocks(*encoder_, shard);
  shard_conv_blocks(*decoder_, shard);
  shard_ = shard;
}

std::vector<torch::Tensor> UNetBaseImpl::forward(const torch::Tensor& x) {
  const int dims = options.spatial_dims();
  MEDSEG_CHECK(x.dim() == dims + 2, "network: ", class_name(), " expects a ", dims + 2,
               "-D input (N, C, spatial), got ", x.dim(), "-D");
  if (shard_ && shard_->active()) {
    Shape patch(x.sizes().begin() + 2, x.sizes().end());
    patch[shard_->axis] *= shard_->count;
    check_shardable_patch(options.strides(), dims, patch, shard_->axis, shard_->count);
  }
  return decoder_->forward(encoder_->forward(x));
}

PlainConvUNetImpl::PlainConvUNetImpl(UNetOptions options_) : CloneableNetwork(std::move(options_), false) {}
ResidualEncoderUNetImpl::ResidualEncoderUNetImpl(UNetOptions options_) : CloneableNetwork(std::move(options_), true) {}

}  // namespace medseg::models
