#pragma once
// SwinUNETR (Hatamizadeh et al. 2022) as MONAI builds it (monai/networks/nets/swin_unetr.py, v1 and
// use_v2), 2D and 3D, patch size 2, with MONAI's state-dict names (swinViT.layers1.0.blocks.0...,
// encoder1.layer.conv1.conv.weight, decoder5.transp_conv.conv.weight, out.conv.conv.weight).
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>

#include <array>

#include "models/monai_blocks.h"
#include "models/network.h"
#include "models/swin_blocks.h"

namespace medseg::models {

struct SwinUNETROptions {
  SwinUNETROptions(int64_t in_channels, int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(int64_t, feature_size) = 24;  // must be divisible by 12
  TORCH_ARG(std::vector<int64_t>, depths) = std::vector<int64_t>{2, 2, 2, 2};
  TORCH_ARG(std::vector<int64_t>, num_heads) = std::vector<int64_t>{3, 6, 12, 24};
  TORCH_ARG(int64_t, window_size) = 7;
  TORCH_ARG(double, mlp_ratio) = 4.0;
  TORCH_ARG(double, drop_rate) = 0.0;
  TORCH_ARG(double, attn_drop_rate) = 0.0;
  TORCH_ARG(double, dropout_path_rate) = 0.0;
  TORCH_ARG(bool, normalize) = true;
  TORCH_ARG(bool, use_checkpoint) = false;
  TORCH_ARG(bool, use_v2) = false;
  TORCH_ARG(int, spatial_dims) = 3;
  TORCH_ARG(bool, inplace) = true;
};

// The hierarchical Swin encoder: patch embedding then four stages; returns the five (optionally
// layer-normalised) hidden states at 1/2 ... 1/32 resolution.
class SwinTransformerImpl : public torch::nn::Cloneable<SwinTransformerImpl> {
 public:
  explicit SwinTransformerImpl(SwinUNETROptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  std::vector<torch::Tensor> forward(const torch::Tensor& x);
  void set_checkpointing(bool on);

  SwinUNETROptions options;

 private:
  NamedConv patch_embed_{nullptr};  // keys patch_embed.proj.*
  // MONAI keeps each stage in a one-element ModuleList, layers1 ... layers4 (keys layers1.0.*), and
  // with use_v2 a UnetrBasicBlock before it in layers1c ... layers4c. These are those four members.
  std::array<torch::nn::ModuleList, 4> layers_{nullptr, nullptr, nullptr, nullptr};
  std::array<torch::nn::ModuleList, 4> layers_c_{nullptr, nullptr, nullptr, nullptr};
};
TORCH_MODULE(SwinTransformer);

class SwinUNETRImpl : public CloneableNetwork<SwinUNETRImpl> {
 public:
  explicit SwinUNETRImpl(SwinUNETROptions options_);
  // Checks the options (medseg::Error) and builds the network.
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  // Throws medseg::Error unless every spatial size is divisible by 32.
  std::vector<torch::Tensor> forward(const torch::Tensor& x) override;
  void set_deep_supervision(bool) override {}  // single-scale output
  // Refuses any shard: shifted windows and patch merging cross slab borders (docs/spatial_parallel.md).
  void set_spatial_shard(std::optional<distributed::SpatialShard> shard) override;
  bool deep_supervision() const override { return false; }
  std::string class_name() const override { return "SwinUNETR"; }
  int spatial_dims() const override { return options.spatial_dims(); }
  std::string segmentation_head_prefix() const override { return "out."; }
  void set_checkpointing(bool on);

  SwinUNETROptions options;

 private:
  SwinTransformer swin_vit_{nullptr};
  UnetrBasicBlock encoder1_{nullptr}, encoder2_{nullptr}, encoder3_{nullptr}, encoder4_{nullptr}, encoder10_{nullptr};
  UnetrUpBlock decoder5_{nullptr}, decoder4_{nullptr}, decoder3_{nullptr}, decoder2_{nullptr}, decoder1_{nullptr};
  UnetOutBlock out_{nullptr};
};
TORCH_MODULE(SwinUNETR);

// "in_channels=1, out_channels=2, feature_size=24, depths=[2, 2, 2, 2], ..."
void print_swin_options(std::ostream& out, const SwinUNETROptions& o);

}  // namespace medseg::models
