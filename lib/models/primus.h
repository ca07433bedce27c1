#pragma once
// Primus (Wald, Roy, Isensee et al. 2025, "Enforcing attention usage for 3D medical image segmentation"), as
// dynamic-network-architectures builds it (architectures/primus.py, class Primus): a strided convolution cuts
// the patch into tokens, an EVA transformer (models/eva_blocks.h) mixes them, and transposed convolutions with
// LayerNormNd and GELU decode them back to the patch. State-dict names are theirs (down_projection.proj.weight,
// eva.blocks.0.attn.q_proj.weight, up_projection.decode.0.0.weight, mask_token, register_tokens).
// The network takes inputs of exactly `input_shape` (its position embedding is built for that token grid).
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>

#include <optional>
#include <string>

#include "models/eva_blocks.h"
#include "models/layers.h"
#include "models/network.h"
#include "plans/plans.h"

namespace medseg::models {

struct PrimusOptions {
  PrimusOptions(int64_t in_channels, int64_t num_classes, int64_t embed_dim, int64_t depth, int64_t num_heads,
                Shape input_shape)
      : in_channels_(in_channels),
        num_classes_(num_classes),
        embed_dim_(embed_dim),
        depth_(depth),
        num_heads_(num_heads),
        input_shape_(std::move(input_shape)) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, num_classes);
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(int64_t, depth);      // eva_depth
  TORCH_ARG(int64_t, num_heads);  // eva_numheads
  TORCH_ARG(Shape, input_shape);  // the patch size the network is built for; a multiple of patch_embed_size
  TORCH_ARG(Shape, patch_embed_size) = Shape{8, 8, 8};  // powers of two
  TORCH_ARG(double, mlp_ratio) = 4.0 * 2 / 3;
  TORCH_ARG(double, drop_path_rate) = 0.0;
  TORCH_ARG(std::optional<double>, init_values);
  TORCH_ARG(bool, scale_attn_inner) = false;
  TORCH_ARG(bool, use_abs_pos_emb) = true;
  TORCH_ARG(bool, use_rot_pos_emb) = true;
  TORCH_ARG(int64_t, num_register_tokens) = 0;
};

// nnU-Net's nnUNet_Primus_{S,B,M,L}_Trainer networks (primus_trainers.py): embed 396/792/864/1056, depth
// 12/12/16/24, heads 6/12/12/16, patches of 8^3, drop path 0.2, layer scale 0.1, the attention's inner norm.
// Throws medseg::Error for another size.
PrimusOptions primus_trainer_options(const std::string& size, int64_t in_channels, int64_t num_classes,
                                     const Shape& input_shape);

// The options of a plans.json Primus block (planning::PrimusPlan). Throws medseg::Error when it has no
// input_shape (a block read outside a configuration must name it).
PrimusOptions primus_options(const planning::PrimusPlan& plan, int64_t in_channels, int64_t num_classes);

// PatchDecode's stages: channels (embed_dim, ..., num_classes) and each transposed convolution's stride.
struct PrimusDecoderPlan {
  Shape channels;
  std::vector<Shape> strides;
};
PrimusDecoderPlan primus_decoder_plan(const PrimusOptions& o);

// Trainable elements, from the options alone (what the network built from them holds; the memory model's).
int64_t primus_parameter_count(const PrimusOptions& o);

// dynamic-network-architectures' LayerNormNd: a LayerNorm over the channels of (B, C, *spatial), eps 1e-6.
class LayerNormNdImpl : public torch::nn::Cloneable<LayerNormNdImpl> {
 public:
  explicit LayerNormNdImpl(int64_t channels);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t channels_;
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(LayerNormNd);

// One PatchDecode stage before the last: a transposed convolution, LayerNormNd, GELU, named 0, 1, 2 as in
// the Python nn.Sequential.
class PrimusDecodeStageImpl : public torch::nn::Cloneable<PrimusDecodeStageImpl> {
 public:
  PrimusDecodeStageImpl(int64_t in, int64_t out, Shape stride);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t in_, out_;
  Shape stride_;
  torch::nn::ConvTranspose3d up_{nullptr};
  LayerNormNd norm_{nullptr};
};
TORCH_MODULE(PrimusDecodeStage);

class PrimusImpl : public SegmentationNetworkImpl {
 public:
  explicit PrimusImpl(PrimusOptions options_);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  std::vector<torch::Tensor> forward(const torch::Tensor& x) override;
  // Primus has one output: deep supervision stays off (nnU-Net's AbstractPrimus turns it off too).
  void set_deep_supervision(bool on) override;
  bool deep_supervision() const override { return false; }
  std::string class_name() const override { return "Primus"; }
  int spatial_dims() const override { return 3; }
  std::string segmentation_head_prefix() const override;
  // A copy built from the options that takes this network's tensors (mask_token and register_tokens are
  // the network's own, so CloneableNetwork's children-only copy does not fit).
  std::shared_ptr<torch::nn::Module> clone(
      const torch::optional<torch::Device>& device = torch::nullopt) const override;
  void set_checkpointing(bool on) { eva_->set_checkpointing(on); }

  PrimusOptions options;

 private:
  // Holders named as in Python (down_projection.proj, up_projection.decode), which have no forward of their own.
  std::shared_ptr<torch::nn::Module> down_projection_, up_projection_;
  torch::nn::Conv3d proj_{nullptr};
  torch::nn::ModuleList decode_{nullptr};  // PrimusDecodeStage, ..., the last ConvTranspose3d
  std::vector<PrimusDecodeStage> stages_;
  torch::nn::ConvTranspose3d head_{nullptr};
  Eva eva_{nullptr};
  torch::Tensor mask_token_, register_tokens_;
};
TORCH_MODULE(Primus);

}  // namespace medseg::models
