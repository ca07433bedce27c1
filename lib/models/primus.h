#pragma once
// Primus (Wald, Roy, Isensee et al. 2025, "Enforcing attention usage for 3D medical image segmentation"), as
// dynamic-network-architectures builds it (architectures/primus.py, classes Primus, PrimusV2, PrimusV3): a
// strided convolution (V2, V3: a residual patch embedding) cuts the patch into tokens, an EVA transformer
// (models/eva_blocks.h) mixes them, and transposed convolutions with LayerNormNd and GELU decode them back to the
// patch. State-dict names are theirs (down_projection.proj.weight,
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
#include "models/unet_blocks.h"
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
  // The patch embedding (planning::PrimusPlan says the same): empty embed_channels, Primus's strided convolution;
  // otherwise V2's or V3's residual embedding (PrimusResidualEmbedding below), whose 2^levels must be the
  // patch_embed_size on every axis.
  TORCH_ARG(Shape, embed_channels);  // the stem's, then each level's
  TORCH_ARG(Shape, embed_depths);    // BasicBlockD per level
  TORCH_ARG(bool, embed_leaky_relu) = false;
  TORCH_ARG(bool, embed_add_skips) = false;
};

// nnU-Net's nnUNet_Primus_{S,B,M,L}_Trainer networks (primus_trainers.py): embed 396/792/864/1056, depth
// 12/12/16/24, heads 6/12/12/16, patches of 8^3, drop path 0.2, layer scale 0.1, the attention's inner norm.
// `size` "V2S" ... "V3L" are nnUNet_PrimusV2S_Trainer's ... (the same transformer on PrimusV2's or PrimusV3's
// residual patch embedding). Throws medseg::Error for another name.
PrimusOptions primus_trainer_options(const std::string& size, int64_t in_channels, int64_t num_classes,
                                     const Shape& input_shape);
// The residual patch embedding of dynamic-network-architectures' PrimusV2 (PatchEmbed_deeper's defaults) or
// PrimusV3 (PatchEmbedDeeperControlled's), `version` 2 or 3, set on `o`.
PrimusOptions with_residual_embedding(PrimusOptions o, int version);

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

// PrimusV2's and PrimusV3's patch embedding (dynamic-network-architectures' PatchEmbed_deeper and
// PatchEmbedDeeperControlled): a stem of one BasicBlockD (conv bias) to embed_channels[0] at full resolution,
// per level a stack of BasicBlockD (no conv bias) whose first halves the resolution, a 1x1x1 convolution to
// embed_dim, and with embed_add_skips the stem's and every level's output but the last projected onto the token
// grid by a strided convolution, scaled by a learned factor (1e-5 at first) and added. Instance norm (affine),
// ReLU (V2) or LeakyReLU (V3). Keys as in Python: stem.blocks.0.*, stages.<l>.blocks.<j>.*, final_proj.*,
// proj_to_tokens.<i>.*, scale_proj_to_tokens.<i>.
class PrimusResidualEmbeddingImpl : public torch::nn::Cloneable<PrimusResidualEmbeddingImpl> {
 public:
  explicit PrimusResidualEmbeddingImpl(PrimusOptions options_);
  void reset() override;
  torch::Tensor forward(torch::Tensor x);

  PrimusOptions options;

 private:
  StackedResidualBlocks stem_{nullptr};
  std::vector<StackedResidualBlocks> stages_;
  torch::nn::Conv3d final_proj_{nullptr};
  std::vector<torch::nn::Conv3d> to_tokens_;
  std::vector<torch::Tensor> scales_;
};
TORCH_MODULE(PrimusResidualEmbedding);

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
  EncoderKeys encoder_keys() const override;
  // A copy built from the options that takes this network's tensors (mask_token and register_tokens are
  // the network's own, so CloneableNetwork's children-only copy does not fit).
  std::shared_ptr<torch::nn::Module> clone(
      const torch::optional<torch::Device>& device = torch::nullopt) const override;
  void set_checkpointing(bool on) { eva_->set_checkpointing(on); }

  PrimusOptions options;

 private:
  // Holders named as in Python (down_projection.proj, up_projection.decode), which have no forward of their own.
  std::shared_ptr<torch::nn::Module> down_projection_, up_projection_;
  torch::nn::Conv3d proj_{nullptr};                      // Primus's patch embedding
  PrimusResidualEmbedding residual_embedding_{nullptr};  // or V2's and V3's
  torch::nn::ModuleList decode_{nullptr};                // PrimusDecodeStage, ..., the last ConvTranspose3d
  std::vector<PrimusDecodeStage> stages_;
  torch::nn::ConvTranspose3d head_{nullptr};
  Eva eva_{nullptr};
  torch::Tensor mask_token_, register_tokens_;
};
TORCH_MODULE(Primus);

}  // namespace medseg::models
