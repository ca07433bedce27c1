#include "models/primus.h"

#include <torch/nn/init.h>

#include "core/error.h"
#include "plans/primus_decoder.h"

namespace medseg::models {

PrimusOptions primus_trainer_options(const std::string& size, int64_t in_channels, int64_t num_classes,
                                     const Shape& input_shape) {
  const bool versioned = size.size() == 3 && (size.rfind("V2", 0) == 0 || size.rfind("V3", 0) == 0);
  const auto s = planning::primus_size(versioned ? size.substr(2) : size);
  if (!s) throw Error("Primus: unknown size '" + size + "' (S, B, M or L, or V2S ... V3L)");
  PrimusOptions o = PrimusOptions(in_channels, num_classes, s->embed_dim, s->eva_depth, s->eva_numheads, input_shape)
                        .drop_path_rate(0.2)
                        .init_values(0.1)
                        .scale_attn_inner(true);
  return versioned ? with_residual_embedding(std::move(o), size[1] - '0') : o;
}

namespace {

// The plan's patch embedding set on `o` (the strided convolution when the plan has no residual one).
PrimusOptions with_embedding_of(PrimusOptions o, const planning::PrimusPlan& plan) {
  return o.embed_channels(to_shape(plan.embed_channels))
      .embed_depths(to_shape(plan.embed_depths))
      .embed_leaky_relu(plan.embed_leaky_relu)
      .embed_add_skips(plan.embed_add_skips);
}

}  // namespace

PrimusOptions with_residual_embedding(PrimusOptions o, int version) {
  planning::PrimusPlan plan;
  planning::set_residual_embedding(plan, version);
  return with_embedding_of(std::move(o), plan);
}

PrimusOptions primus_options(const planning::PrimusPlan& plan, int64_t in_channels, int64_t num_classes) {
  MEDSEG_CHECK(!plan.input_shape.empty(),
               "Primus: arch_kwargs.input_shape (the patch size) is needed where no configuration gives it");
  return with_embedding_of(PrimusOptions(in_channels, num_classes, plan.embed_dim, plan.eva_depth, plan.eva_numheads,
                                         to_shape(plan.input_shape))
                               .patch_embed_size(to_shape(plan.patch_embed_size))
                               .mlp_ratio(plan.mlp_ratio)
                               .drop_path_rate(plan.drop_path_rate)
                               .init_values(plan.init_values)
                               .scale_attn_inner(plan.scale_attn_inner)
                               .use_rot_pos_emb(plan.use_rot_pos_emb)
                               .use_abs_pos_emb(plan.use_abs_pos_embed)
                               .num_register_tokens(plan.num_register_tokens),
                           plan);
}

PrimusDecoderPlan primus_decoder_plan(const PrimusOptions& o) {
  planning::PrimusDecoderStages d =
      planning::primus_decoder_stages(o.patch_embed_size(), o.embed_dim(), o.num_classes());
  return {std::move(d.channels), std::move(d.strides)};
}

namespace {

EvaOptions eva_options(const PrimusOptions& o) {
  Shape grid;
  for (size_t i = 0; i < o.input_shape().size(); ++i) grid.push_back(o.input_shape()[i] / o.patch_embed_size()[i]);
  return EvaOptions(o.embed_dim(), o.depth(), o.num_heads(), grid)
      .mlp_ratio(o.mlp_ratio())
      .scale_attn_inner(o.scale_attn_inner())
      .init_values(o.init_values())
      .drop_path_rate(o.drop_path_rate())
      .use_abs_pos_emb(o.use_abs_pos_emb())
      .use_rot_pos_emb(o.use_rot_pos_emb())
      .num_register_tokens(o.num_register_tokens());
}

void check_options(const PrimusOptions& o) {
  MEDSEG_CHECK(o.input_shape().size() == 3 && o.patch_embed_size().size() == 3,
               "Primus: input_shape and patch_embed_size must have 3 axes (Primus is 3D)");
  for (size_t i = 0; i < 3; ++i) {
    const int64_t p = o.patch_embed_size()[i];
    MEDSEG_CHECK(p >= 1 && (p & (p - 1)) == 0, "Primus: patch_embed_size must be powers of two, got ", p);
    MEDSEG_CHECK(o.input_shape()[i] >= p && o.input_shape()[i] % p == 0, "Primus: the patch size ", o.input_shape()[i],
                 " is not a multiple of the patch embedding's ", p, " (axis ", i, ")");
  }
  MEDSEG_CHECK(o.in_channels() >= 1 && o.num_classes() >= 1 && o.depth() >= 1 && o.num_heads() >= 1,
               "Primus: channels, classes, depth and heads must be positive");
  if (o.embed_channels().empty()) return;
  const size_t levels = o.embed_depths().size();
  MEDSEG_CHECK(levels >= 1 && o.embed_channels().size() == levels + 1,
               "Primus: the residual patch embedding needs one more channel count than levels, got ",
               o.embed_channels().size(), " and ", levels);
  for (const int64_t p : o.patch_embed_size())
    MEDSEG_CHECK(p == (int64_t{1} << levels), "Primus: a residual patch embedding of ", levels,
                 " levels makes patches of ", int64_t{1} << levels, " on every axis, not ",
                 torch::IntArrayRef(o.patch_embed_size()));
}

// Trainable elements of a BasicBlockD with 3x3x3 convolutions and affine instance norms.
int64_t basic_block_parameters(int64_t in, int64_t out, bool bias) {
  int64_t n = (in + out) * out * 27 + 4 * out + (bias ? 2 * out : 0);
  if (in != out) n += in * out + 2 * out;  // the 1x1x1 projection on the skip
  return n;
}

int64_t residual_embedding_parameters(const PrimusOptions& o) {
  const Shape& c = o.embed_channels();
  const int64_t e = o.embed_dim();
  const size_t levels = o.embed_depths().size();
  int64_t n = basic_block_parameters(o.in_channels(), c[0], true);
  for (size_t l = 0; l < levels; ++l)
    n += basic_block_parameters(c[l], c[l + 1], false) +
         (o.embed_depths()[l] - 1) * basic_block_parameters(c[l + 1], c[l + 1], false);
  n += c[levels] * e + e;  // final_proj
  if (o.embed_add_skips())
    for (size_t l = 0; l < levels; ++l) {  // the stem's and every level's but the last, and their scales
      const int64_t down = int64_t{1} << (levels - l);
      n += c[l] * e * down * down * down + e + 1;
    }
  return n;
}

}  // namespace

int64_t primus_parameter_count(const PrimusOptions& o) {
  check_options(o);
  const EvaOptions eva = eva_options(o);
  const int64_t e = o.embed_dim(), h = eva_mlp_hidden(eva), tokens = product(eva.grid());
  int64_t n = o.embed_channels().empty() ? o.in_channels() * e * product(o.patch_embed_size()) + e  // down_projection
                                         : residual_embedding_parameters(o);
  if (o.use_abs_pos_emb()) n += (tokens + o.num_register_tokens()) * e;
  n += o.num_register_tokens() * e;
  int64_t block = 2 * e + (e * e + e) + e * e + (e * e + e) + (e * e + e) + 2 * e;  // norms, q, k, v, proj
  if (o.scale_attn_inner()) block += 2 * e;
  if (o.init_values()) block += 2 * e;
  block += 2 * (e * h + h) + 2 * h + (h * e + e);  // fc1_g, fc1_x, norm, fc2
  n += o.depth() * block + 2 * e;                  // blocks, final norm
  const PrimusDecoderPlan plan = primus_decoder_plan(o);
  for (size_t s = 0; s + 1 < plan.channels.size(); ++s) {
    n += plan.channels[s] * plan.channels[s + 1] * product(plan.strides[s]) + plan.channels[s + 1];
    if (s + 2 < plan.channels.size()) n += 2 * plan.channels[s + 1];  // LayerNormNd
  }
  return n;
}

LayerNormNdImpl::LayerNormNdImpl(int64_t channels) : channels_(channels) { reset(); }

void LayerNormNdImpl::reset() {
  weight_ = register_parameter("weight", torch::ones({channels_}));
  bias_ = register_parameter("bias", torch::zeros({channels_}));
}

torch::Tensor LayerNormNdImpl::forward(const torch::Tensor& x) {
  const torch::Tensor u = x.mean(1, /*keepdim=*/true);
  const torch::Tensor s = (x - u).pow(2).mean(1, /*keepdim=*/true);
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = channels_;
  return weight_.view(shape) * ((x - u) / torch::sqrt(s + 1e-6)) + bias_.view(shape);
}

PrimusDecodeStageImpl::PrimusDecodeStageImpl(int64_t in, int64_t out, Shape stride)
    : in_(in), out_(out), stride_(std::move(stride)) {
  reset();
}

void PrimusDecodeStageImpl::reset() {
  up_ = register_module(
      "0", torch::nn::ConvTranspose3d(torch::nn::ConvTranspose3dOptions(in_, out_, stride_).stride(stride_)));
  norm_ = register_module("1", LayerNormNd(out_));
}

torch::Tensor PrimusDecodeStageImpl::forward(const torch::Tensor& x) { return torch::gelu(norm_(up_(x))); }

PrimusImpl::PrimusImpl(PrimusOptions options_) : options(std::move(options_)) { reset(); }

namespace {

// InitWeights_He(1e-2) of the patch embedding and decoding: kaiming_normal_(a=0.01), biases zero.
void init_he(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (const auto& child : m.modules())
    for (auto& p : child->named_parameters(/*recurse=*/false)) {
      const bool conv = child->as<torch::nn::Conv3dImpl>() || child->as<torch::nn::ConvTranspose3dImpl>();
      if (!conv) continue;
      if (p.key() == "weight") torch::nn::init::kaiming_normal_(p.value(), 1e-2);
      if (p.key() == "bias") p.value().zero_();
    }
}

}  // namespace

PrimusResidualEmbeddingImpl::PrimusResidualEmbeddingImpl(PrimusOptions options_) : options(std::move(options_)) {
  reset();
}

void PrimusResidualEmbeddingImpl::reset() {
  check_options(options);
  const Shape& c = options.embed_channels();
  const size_t levels = options.embed_depths().size();
  const LayerOptions layers =
      LayerOptions().nonlin(options.embed_leaky_relu() ? NonlinKind::kLeakyReLU : NonlinKind::kReLU);
  stem_ = register_module("stem", StackedResidualBlocks(StackedResidualBlocksOptions(
                                      options.in_channels(), c[0], {3, 3, 3}, LayerOptions(layers).conv_bias(true))));
  auto stages = register_module("stages", torch::nn::ModuleList());
  stages_.clear();
  for (size_t l = 0; l < levels; ++l) {
    stages_.push_back(StackedResidualBlocks(
        StackedResidualBlocksOptions(c[l], c[l + 1], {3, 3, 3}, LayerOptions(layers).conv_bias(false))
            .n_blocks(options.embed_depths()[l])
            .initial_stride({2, 2, 2})));
    stages->push_back(stages_.back());
  }
  final_proj_ =
      register_module("final_proj", torch::nn::Conv3d(torch::nn::Conv3dOptions(c[levels], options.embed_dim(), 1)));
  to_tokens_.clear();
  scales_.clear();
  if (!options.embed_add_skips()) return;
  auto to_tokens = register_module("proj_to_tokens", torch::nn::ModuleList());
  auto scales = register_module("scale_proj_to_tokens", std::make_shared<torch::nn::Module>());
  for (size_t l = 0; l < levels; ++l) {
    const int64_t down = int64_t{1} << (levels - l);
    to_tokens_.push_back(torch::nn::Conv3d(torch::nn::Conv3dOptions(c[l], options.embed_dim(), down).stride(down)));
    to_tokens->push_back(to_tokens_.back());
    scales_.push_back(scales->register_parameter(std::to_string(l), torch::full({}, 1e-5)));
  }
}

// In Python's order: the scaled projections summed level by level, then added to final_proj's output.
torch::Tensor PrimusResidualEmbeddingImpl::forward(torch::Tensor x) {
  x = stem_(std::move(x));
  torch::Tensor skips;
  if (!to_tokens_.empty()) skips = scales_[0] * to_tokens_[0](x);
  for (size_t l = 0; l < stages_.size(); ++l) {
    x = stages_[l](std::move(x));
    if (l + 1 < to_tokens_.size()) skips = skips + scales_[l + 1] * to_tokens_[l + 1](x);
  }
  x = final_proj_(x);
  return skips.defined() ? x + skips : x;
}

void PrimusImpl::reset() {
  check_options(options);
  const int64_t e = options.embed_dim();
  proj_ = nullptr;
  residual_embedding_ = nullptr;
  if (options.embed_channels().empty()) {
    down_projection_ = register_module("down_projection", std::make_shared<torch::nn::Module>());
    proj_ = down_projection_->register_module(
        "proj", torch::nn::Conv3d(torch::nn::Conv3dOptions(options.in_channels(), e, options.patch_embed_size())
                                      .stride(options.patch_embed_size())));
  } else {
    residual_embedding_ = register_module("down_projection", PrimusResidualEmbedding(options));
    down_projection_ = residual_embedding_.ptr();
  }
  const PrimusDecoderPlan plan = primus_decoder_plan(options);
  decode_ = torch::nn::ModuleList();
  stages_.clear();
  const size_t last = plan.channels.size() - 2;
  for (size_t s = 0; s < last; ++s) {
    stages_.push_back(PrimusDecodeStage(plan.channels[s], plan.channels[s + 1], plan.strides[s]));
    decode_->push_back(stages_.back());
  }
  head_ = torch::nn::ConvTranspose3d(
      torch::nn::ConvTranspose3dOptions(plan.channels[last], plan.channels[last + 1], plan.strides[last])
          .stride(plan.strides[last]));
  decode_->push_back(head_);
  up_projection_ = register_module("up_projection", std::make_shared<torch::nn::Module>());
  up_projection_->register_module("decode", decode_);
  eva_ = register_module("eva", Eva(eva_options(options)));
  mask_token_ = register_buffer("mask_token", torch::zeros({1, 1, e}));
  if (options.num_register_tokens() > 0) {
    register_tokens_ = register_parameter("register_tokens", torch::zeros({1, options.num_register_tokens(), e}));
    torch::NoGradGuard no_grad;
    register_tokens_.normal_(0.0, 1e-6);
  }
  init_he(*down_projection_);
  init_he(*up_projection_);
}

void PrimusImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::Primus(";
  if (!options.embed_channels().empty())
    stream << "residual_embedding=" << torch::IntArrayRef(options.embed_channels())
           << (options.embed_add_skips() ? " with skips" : "") << ", ";
  stream << "embed_dim=" << options.embed_dim() << ", depth=" << options.depth()
         << ", num_heads=" << options.num_heads()
         << ", patch_embed_size=" << torch::IntArrayRef(options.patch_embed_size())
         << ", input_shape=" << torch::IntArrayRef(options.input_shape()) << ")";
}

std::vector<torch::Tensor> PrimusImpl::forward(const torch::Tensor& x) {
  torch::Tensor t = proj_ ? proj_(x) : residual_embedding_(x);  // (B, C, W, H, D)
  const auto sizes = t.sizes().vec();
  // b c w h d -> b (w h d) c as einops does it (a contiguous copy): the linear layers then see the same memory
  // layout as in Python, so their kernels round the same way.
  t = t.permute({0, 2, 3, 4, 1}).reshape({sizes[0], -1, sizes[1]});
  const int64_t prefix = options.num_register_tokens();
  if (prefix > 0) t = torch::cat({register_tokens_.expand({t.size(0), -1, -1}), t}, 1);
  t = eva_(t);
  if (prefix > 0) t = t.narrow(1, prefix, t.size(1) - prefix);
  t = t.transpose(1, 2).reshape(sizes);
  for (auto& stage : stages_) t = stage(t);
  return {head_(t)};
}

void PrimusImpl::set_deep_supervision(bool on) {
  (void)on;  // one output whatever the trainer asks, as nnU-Net's AbstractPrimus
}

std::string PrimusImpl::segmentation_head_prefix() const {
  return "up_projection.decode." + std::to_string(decode_->size() - 1) + ".";
}

SegmentationNetworkImpl::EncoderKeys PrimusImpl::encoder_keys() const {
  // primus.py's Primus, and PrimusV2 / PrimusV3 whose residual embedding's first convolution sees the input.
  const std::string in_proj = residual_embedding_ ? "down_projection.stem.blocks.0.conv1.conv" : "down_projection.proj";
  return {"eva", "down_projection", {in_proj}, options.use_abs_pos_emb() ? "eva.pos_embed" : ""};
}

std::shared_ptr<torch::nn::Module> PrimusImpl::clone(const torch::optional<torch::Device>& device) const {
  torch::NoGradGuard no_grad;
  auto copy = std::make_shared<PrimusImpl>(options);
  auto into = copy->named_parameters();
  for (const auto& p : named_parameters())
    into[p.key()].set_data(device ? p.value().to(*device, true, true) : p.value().clone());
  auto buffers = copy->named_buffers();
  for (const auto& b : named_buffers())
    buffers[b.key()].set_data(device ? b.value().to(*device, true, true) : b.value().clone());
  copy->train(is_training());
  copy->shard_ = shard_;
  return copy;
}

}  // namespace medseg::models
