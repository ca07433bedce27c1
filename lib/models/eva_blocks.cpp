#include "models/eva_blocks.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>

#include <cmath>

#include "core/error.h"
#include "core/torch_compat.h"
#include "models/activation_checkpoint.h"
#include "models/swin_blocks.h"

namespace medseg::models {

namespace F = torch::nn::functional;

torch::Tensor rotary_embedding_3d(const Shape& grid, int64_t dim) {
  // timm's freq_bands(dim // 4, temperature=10000, step=1) and build_fourier_pos_embed(in_pixels=False) with
  // ref_feat_shape = feat_shape (t / f * r keeps t up to rounding, so it is done as timm does it).
  const int64_t n = dim / 4;
  const torch::Tensor exponent = torch::arange(0, n, 1, torch::kLong).to(torch::kFloat) / n;
  const torch::Tensor bands = 1.0 / torch::pow(10000.0, exponent);
  std::vector<torch::Tensor> axes;
  for (int64_t s : grid) axes.push_back(torch::arange(s, torch::kLong).to(torch::kFloat) / s * s);
  const torch::Tensor mesh = torch::stack(torch::meshgrid(axes, "ij"), -1).unsqueeze(-1);  // (*grid, 3, 1)
  const torch::Tensor pos = mesh * bands;                                                  // (*grid, 3, n)
  int64_t tokens = 1;
  for (int64_t s : grid) tokens *= s;
  const torch::Tensor sin = pos.sin().reshape({tokens, -1}).repeat_interleave(2, -1);
  const torch::Tensor cos = pos.cos().reshape({tokens, -1}).repeat_interleave(2, -1);
  return torch::cat({sin, cos}, -1);
}

torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& emb) {
  const int64_t d = emb.size(-1) / 2;
  const torch::Tensor sin = emb.narrow(-1, 0, d), cos = emb.narrow(-1, d, d);
  // rot(x): [x0 x1 x2 x3 ...] -> [-x1 x0 -x3 x2 ...]
  const torch::Tensor odd = x.slice(-1, 1, c10::nullopt, 2), even = x.slice(-1, 0, c10::nullopt, 2);
  const torch::Tensor rot = torch::stack({-odd, even}, -1).reshape(x.sizes());
  return x * cos + rot * sin;
}

int64_t eva_mlp_hidden(const EvaOptions& o) {
  return static_cast<int64_t>(static_cast<double>(o.embed_dim()) * o.mlp_ratio());
}

int64_t eva_rope_dim(const EvaOptions& o) {
  const double per_head = static_cast<double>(o.embed_dim()) / static_cast<double>(o.num_heads());
  const auto dim = static_cast<int64_t>(std::llround(per_head / 1.5));
  MEDSEG_CHECK(o.embed_dim() % o.num_heads() == 0 && static_cast<double>(dim) == per_head / 1.5 && dim % 4 == 0,
               "Eva: embed_dim ", o.embed_dim(), " / num_heads ", o.num_heads(),
               " must be a whole multiple of 6 per head (rotary embedding of 3D tokens)");
  return dim;
}

namespace {

// The input of a LayerNorm inside a block, in its weight's precision: under autocast a bf16 or fp16 product
// reaches it, which LibTorch 2.x's autocast casts to fp32 itself (layer_norm is on its fp32 list) and 1.13's
// CPU kernel refuses beside fp32 weights. The same arithmetic either way.
torch::Tensor norm_input(const torch::Tensor& x, const torch::nn::LayerNorm& norm) {
  const auto dtype = norm->weight.scalar_type();
  return x.scalar_type() == dtype ? x : x.to(dtype);
}

// timm's trunc_normal_(std, a=-2, b=2) for Eva's Linear layers, biases zero.
void init_linears(torch::nn::Module& m) {
  for (const auto& child : m.modules(/*include_self=*/false))
    if (auto* l = child->as<torch::nn::LinearImpl>()) {
      l->weight.normal_(0.0, 0.02).clamp_(-2.0, 2.0);
      if (l->bias.defined()) l->bias.zero_();
    }
}

}  // namespace

EvaAttentionImpl::EvaAttentionImpl(int64_t dim, int64_t num_heads, bool scale_norm, int64_t prefix_tokens)
    : dim_(dim), heads_(num_heads), prefix_(prefix_tokens), scale_norm_(scale_norm) {
  reset();
}

void EvaAttentionImpl::reset() {
  q_proj_ = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim_, dim_)));
  k_proj_ = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim_, dim_).bias(false)));
  v_proj_ = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim_, dim_)));
  if (scale_norm_) norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim_})));
  proj_ = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(dim_, dim_)));
}

void EvaAttentionImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::EvaAttention(dim=" << dim_ << ", num_heads=" << heads_ << ")";
}

torch::Tensor EvaAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& rope) {
  const int64_t b = x.size(0), n = x.size(1);
  auto heads = [&](const torch::Tensor& t) { return t.reshape({b, n, heads_, -1}).transpose(1, 2); };
  torch::Tensor q = heads(q_proj_(x)), k = heads(k_proj_(x));
  const torch::Tensor v = heads(v_proj_(x));
  if (rope.defined()) {  // the prefix (register) tokens keep their values
    auto rotate = [&](const torch::Tensor& t) {
      return torch::cat({t.narrow(2, 0, prefix_), apply_rotary(t.narrow(2, prefix_, n - prefix_), rope)}, 2)
          .to(v.scalar_type());
    };
    q = rotate(q);
    k = rotate(k);
  }
  torch::Tensor y = compat::scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape({b, n, dim_});
  if (scale_norm_) y = norm_(norm_input(y, norm_));
  return proj_(y);
}

SwiGLUImpl::SwiGLUImpl(int64_t dim, int64_t hidden) : dim_(dim), hidden_(hidden) { reset(); }

void SwiGLUImpl::reset() {
  fc1_g_ = register_module("fc1_g", torch::nn::Linear(dim_, hidden_));
  fc1_x_ = register_module("fc1_x", torch::nn::Linear(dim_, hidden_));
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden_})));
  fc2_ = register_module("fc2", torch::nn::Linear(hidden_, dim_));
}

torch::Tensor SwiGLUImpl::forward(const torch::Tensor& x) {
  return fc2_(norm_(norm_input(F::silu(fc1_g_(x)) * fc1_x_(x), norm_)));
}

EvaBlockImpl::EvaBlockImpl(EvaOptions options_, double drop_path)
    : options(std::move(options_)), drop_path_(drop_path) {
  reset();
}

void EvaBlockImpl::reset() {
  const int64_t dim = options.embed_dim();
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  attn_ = register_module(
      "attn", EvaAttention(dim, options.num_heads(), options.scale_attn_inner(), options.num_register_tokens()));
  if (options.init_values()) gamma_1_ = register_parameter("gamma_1", torch::full({dim}, *options.init_values()));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  mlp_ = register_module("mlp", SwiGLU(dim, eva_mlp_hidden(options)));
  if (options.init_values()) gamma_2_ = register_parameter("gamma_2", torch::full({dim}, *options.init_values()));
}

torch::Tensor EvaBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& rope) {
  torch::Tensor a = attn_(norm1_(norm_input(x, norm1_)), rope);
  if (gamma_1_.defined()) a = gamma_1_ * a;
  const torch::Tensor h = x + drop_path(a, drop_path_, is_training());
  torch::Tensor m = mlp_(norm2_(norm_input(h, norm2_)));
  if (gamma_2_.defined()) m = gamma_2_ * m;
  return h + drop_path(m, drop_path_, is_training());
}

EvaImpl::EvaImpl(EvaOptions options_) : options(std::move(options_)) { reset(); }

void EvaImpl::reset() {
  const int64_t dim = options.embed_dim(), depth = options.depth();
  int64_t tokens = 1;
  for (int64_t s : options.grid()) tokens *= s;
  if (options.use_abs_pos_emb()) {
    pos_embed_ = register_parameter("pos_embed", torch::zeros({1, tokens + options.num_register_tokens(), dim}));
    torch::NoGradGuard no_grad;
    pos_embed_.normal_(0.0, 0.02).clamp_(-2.0, 2.0);
  }
  if (options.use_rot_pos_emb()) rope_ = rotary_embedding_3d(options.grid(), eva_rope_dim(options));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < depth; ++i) {  // numpy.linspace(0, drop_path_rate, depth)
    const double rate = depth > 1 ? options.drop_path_rate() * static_cast<double>(i) / (depth - 1) : 0.0;
    blocks_->push_back(EvaBlock(options, rate));
  }
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  // Eva's _init_weights and fix_init_weight: each output projection scaled down with its depth.
  torch::NoGradGuard no_grad;
  init_linears(*blocks_);
  for (int64_t i = 0; i < depth; ++i) {
    auto named = blocks_[static_cast<size_t>(i)]->named_parameters();
    const double scale = 1.0 / std::sqrt(2.0 * static_cast<double>(i + 1));
    named["attn.proj.weight"].mul_(scale);
    named["mlp.fc2.weight"].mul_(scale);
  }
}

void EvaImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::Eva(embed_dim=" << options.embed_dim() << ", depth=" << options.depth()
         << ", num_heads=" << options.num_heads() << ")";
}

torch::Tensor EvaImpl::forward(torch::Tensor x) {
  if (pos_embed_.defined()) {
    MEDSEG_CHECK(x.size(1) == pos_embed_.size(1), "Eva: ", x.size(1),
                 " tokens, but the position embedding is built for ", pos_embed_.size(1),
                 " (the network takes inputs of its patch size only)");
    x = x + pos_embed_;
  }
  torch::Tensor rope;
  if (rope_.defined()) rope = rope_.to(x.device());
  for (const auto& m : *blocks_) {
    auto block = std::dynamic_pointer_cast<EvaBlockImpl>(m);
    if (checkpointing_) {
      std::vector<torch::Tensor> params = block->parameters();
      x = activation_checkpoint(
          [block, rope](const std::vector<torch::Tensor>& in) {
            return std::vector<torch::Tensor>{block->forward(in[0], rope)};
          },
          {x}, params)[0];
    } else {
      x = block->forward(x, rope);
    }
  }
  return norm_(norm_input(x, norm_));
}

}  // namespace medseg::models
