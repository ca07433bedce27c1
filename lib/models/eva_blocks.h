#pragma once
// The EVA vision transformer that Primus encodes with (dynamic-network-architectures'
// building_blocks/eva.py on timm's EvaBlock): absolute and rotary position embeddings, pre-norm blocks of
// attention (separate q/k/v projections, k without bias) and a SwiGLU MLP with a norm inside, layer scale and
// stochastic depth. State-dict names are theirs (pos_embed, blocks.0.attn.q_proj.weight, blocks.0.mlp.fc1_g...).
// Tokens are (B, N, C).
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <optional>

#include "models/layers.h"

namespace medseg::models {

// timm's RotaryEmbeddingCat(dim, in_pixels=False, feat_shape=ref_feat_shape=grid) for a 3D token grid:
// (prod(grid), 2 * 6 * (dim / 4)) holding sin then cos, each interleaved per frequency, as timm builds it
// (float32, the same torch operations in the same order).
torch::Tensor rotary_embedding_3d(const Shape& grid, int64_t dim);
// timm's apply_rot_embed_cat (interleaved pairs): x * cos + rot(x) * sin, x (..., N, D), emb (N, 2D).
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& emb);

struct EvaOptions {
  EvaOptions(int64_t embed_dim, int64_t depth, int64_t num_heads, Shape grid)
      : embed_dim_(embed_dim), depth_(depth), num_heads_(num_heads), grid_(std::move(grid)) {}
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(int64_t, depth);
  TORCH_ARG(int64_t, num_heads);
  TORCH_ARG(Shape, grid);  // the token grid (input shape / patch size): pos_embed and rope are built for it
  TORCH_ARG(double, mlp_ratio) = 4.0 * 2 / 3;
  TORCH_ARG(bool, scale_attn_inner) = false;      // a LayerNorm on the attention output before its projection
  TORCH_ARG(std::optional<double>, init_values);  // layer scale (gamma_1/2) when set
  TORCH_ARG(double, drop_path_rate) = 0.0;        // rising linearly from 0 in block 0 to this in the last
  TORCH_ARG(bool, use_abs_pos_emb) = true;
  TORCH_ARG(bool, use_rot_pos_emb) = true;
  TORCH_ARG(int64_t, num_register_tokens) = 0;  // prefix tokens: no rotary embedding
};

// The hidden width of a block's SwiGLU: int(embed_dim * mlp_ratio), as Python truncates it.
int64_t eva_mlp_hidden(const EvaOptions& o);
// The rotary embedding's dimension per head: head_dim / 1.5, which must be a whole multiple of 4
// (eva.py's 3D rule). Throws medseg::Error otherwise.
int64_t eva_rope_dim(const EvaOptions& o);

class EvaAttentionImpl : public torch::nn::Cloneable<EvaAttentionImpl> {
 public:
  EvaAttentionImpl(int64_t dim, int64_t num_heads, bool scale_norm, int64_t prefix_tokens);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  // `rope` undefined: no rotary embedding.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& rope);

 private:
  int64_t dim_, heads_, prefix_;
  bool scale_norm_;
  torch::nn::Linear q_proj_{nullptr}, k_proj_{nullptr}, v_proj_{nullptr}, proj_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
};
TORCH_MODULE(EvaAttention);

// timm's SwiGLU with a norm: fc2(norm(silu(fc1_g(x)) * fc1_x(x))).
class SwiGLUImpl : public torch::nn::Cloneable<SwiGLUImpl> {
 public:
  SwiGLUImpl(int64_t dim, int64_t hidden);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t dim_, hidden_;
  torch::nn::Linear fc1_g_{nullptr}, fc1_x_{nullptr}, fc2_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
};
TORCH_MODULE(SwiGLU);

class EvaBlockImpl : public torch::nn::Cloneable<EvaBlockImpl> {
 public:
  EvaBlockImpl(EvaOptions options, double drop_path);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& rope);

  EvaOptions options;

 private:
  double drop_path_;
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  EvaAttention attn_{nullptr};
  SwiGLU mlp_{nullptr};
  torch::Tensor gamma_1_, gamma_2_;
};
TORCH_MODULE(EvaBlock);

class EvaImpl : public torch::nn::Cloneable<EvaImpl> {
 public:
  explicit EvaImpl(EvaOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  // (B, prefix + prod(grid), C) -> the same, normed. Positions beyond the grid's are refused.
  torch::Tensor forward(torch::Tensor x);
  void set_checkpointing(bool on) { checkpointing_ = on; }

  EvaOptions options;

 private:
  bool checkpointing_ = false;
  torch::Tensor pos_embed_, rope_;  // rope_: not a state-dict entry (timm's buffer is not persistent)
  torch::nn::ModuleList blocks_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
};
TORCH_MODULE(Eva);

}  // namespace medseg::models
