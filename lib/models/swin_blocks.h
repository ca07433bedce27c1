#pragma once
// The Swin transformer parts of MONAI's SwinUNETR (monai/networks/nets/swin_unetr.py), 2D and 3D.
// Tensors inside a stage are channels-last: (B, D, H, W, C) or (B, H, W, C).
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <utility>

#include "models/layers.h"

namespace medseg::models {

// Shrinks each window axis to the feature size where that is not larger, with shift 0 there.
std::pair<Shape, Shape> get_window_size(const Shape& sizes, const Shape& window, const Shape& shift);
// (B, *spatial, C) -> (B * n_windows, prod(window), C); spatial sizes must be multiples of window.
torch::Tensor window_partition(const torch::Tensor& x, const Shape& window);
// Inverse of window_partition for a (B, *spatial) shape given as {B, *spatial}.
torch::Tensor window_reverse(const torch::Tensor& windows, const Shape& window, const Shape& b_and_spatial);
// Shifted-window attention mask (n_windows, N, N): 0 within a region, -100 across regions.
torch::Tensor compute_mask(const Shape& padded_sizes, const Shape& window, const Shape& shift,
                           const torch::Device& device);
// PatchMerging's gather: the 2^dims stride-2 sub-grids of (B, *spatial, C) concatenated on channels.
torch::Tensor merge_subgrids(torch::Tensor x, int dims);
// Stochastic depth: zeroes whole samples with probability p, scales the rest by 1/(1-p).
torch::Tensor drop_path(const torch::Tensor& x, double p, bool training);

struct WindowAttentionOptions {
  WindowAttentionOptions(int64_t dim, int64_t num_heads, Shape window_size)
      : dim_(dim), num_heads_(num_heads), window_size_(std::move(window_size)) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(int64_t, num_heads);
  TORCH_ARG(Shape, window_size);
  TORCH_ARG(bool, qkv_bias) = true;
  TORCH_ARG(double, attn_drop) = 0.0;
  TORCH_ARG(double, proj_drop) = 0.0;
};

// Multi-head self-attention inside each window, with a learned relative position bias.
class WindowAttentionImpl : public torch::nn::Cloneable<WindowAttentionImpl> {
 public:
  explicit WindowAttentionImpl(WindowAttentionOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

  WindowAttentionOptions options;

 private:
  double scale_ = 1.0;
  torch::Tensor table_, index_;
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr};
};
TORCH_MODULE(WindowAttention);

struct SwinMlpOptions {
  SwinMlpOptions(int64_t dim, int64_t hidden_dim) : dim_(dim), hidden_dim_(hidden_dim) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(int64_t, hidden_dim);
  TORCH_ARG(double, dropout) = 0.0;
};

// MONAI's MLPBlock in "swin" dropout mode: linear1 -> GELU -> dropout -> linear2 -> dropout.
class SwinMlpImpl : public torch::nn::Cloneable<SwinMlpImpl> {
 public:
  explicit SwinMlpImpl(SwinMlpOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x);

  SwinMlpOptions options;

 private:
  torch::nn::Linear linear1_{nullptr}, linear2_{nullptr};
};
TORCH_MODULE(SwinMlp);

struct SwinTransformerBlockOptions {
  SwinTransformerBlockOptions(int64_t dim, int64_t num_heads, Shape window_size)
      : dim_(dim), num_heads_(num_heads), window_size_(window_size), shift_size_(Shape(window_size.size(), 0)) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(int64_t, num_heads);
  TORCH_ARG(Shape, window_size);
  TORCH_ARG(Shape, shift_size);  // zeros: no shift
  TORCH_ARG(double, mlp_ratio) = 4.0;
  TORCH_ARG(double, drop) = 0.0;
  TORCH_ARG(double, attn_drop) = 0.0;
  TORCH_ARG(double, drop_path) = 0.0;
  // Recompute both halves in backward (MONAI's use_checkpoint), in training only.
  TORCH_ARG(bool, use_checkpoint) = false;
};

class SwinTransformerBlockImpl : public torch::nn::Cloneable<SwinTransformerBlockImpl> {
 public:
  explicit SwinTransformerBlockImpl(SwinTransformerBlockOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

  SwinTransformerBlockOptions options;

 private:
  // norm1 + (shift) + window attention + (reverse shift); checkpointed as one piece like MONAI.
  torch::Tensor forward_part1(const torch::Tensor& x, const torch::Tensor& mask);
  // drop_path(mlp(norm2(x))); the second checkpointed piece.
  torch::Tensor forward_part2(const torch::Tensor& x);

  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  WindowAttention attn_{nullptr};
  SwinMlp mlp_{nullptr};
};
TORCH_MODULE(SwinTransformerBlock);

struct PatchMergingOptions {
  PatchMergingOptions(int64_t dim, int spatial_dims) : dim_(dim), spatial_dims_(spatial_dims) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(int, spatial_dims);
};

// Concatenates the 2^dims sub-grids -> LayerNorm -> Linear(2^dims * dim -> 2 * dim, no bias).
// The 3D sub-grid order is MONAI >= 1.5's fixed "merging" (all 8 offsets; MONAI <= 1.4 repeated two).
class PatchMergingImpl : public torch::nn::Cloneable<PatchMergingImpl> {
 public:
  explicit PatchMergingImpl(PatchMergingOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(torch::Tensor x);

  PatchMergingOptions options;

 private:
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear reduction_{nullptr};
};
TORCH_MODULE(PatchMerging);

struct BasicLayerOptions {
  BasicLayerOptions(int64_t dim, int64_t depth, int64_t num_heads, Shape window_size)
      : dim_(dim),
        depth_(depth),
        num_heads_(num_heads),
        window_size_(std::move(window_size)),
        drop_path_(static_cast<size_t>(depth), 0.0) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(int64_t, depth);
  TORCH_ARG(int64_t, num_heads);
  TORCH_ARG(Shape, window_size);
  TORCH_ARG(std::vector<double>, drop_path);  // one rate per block
  TORCH_ARG(double, mlp_ratio) = 4.0;
  TORCH_ARG(double, drop) = 0.0;
  TORCH_ARG(double, attn_drop) = 0.0;
  TORCH_ARG(bool, use_checkpoint) = false;
};

// One Swin stage: `depth` blocks (odd ones shifted by window/2), then patch merging.
// Input and output are channels-first.
class BasicLayerImpl : public torch::nn::Cloneable<BasicLayerImpl> {
 public:
  explicit BasicLayerImpl(BasicLayerOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x);
  void set_checkpointing(bool on);

  BasicLayerOptions options;

 private:
  Shape shift_;
  torch::nn::ModuleList blocks_{nullptr};
  PatchMerging downsample_{nullptr};
};
TORCH_MODULE(BasicLayer);

}  // namespace medseg::models
