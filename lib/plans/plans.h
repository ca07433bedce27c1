#pragma once
// plans.json in nnU-Net v2's schema, read into typed structs for the later stages (preprocessing,
// training, inference). Files written by nnU-Net itself load unchanged: `inherits_from` is resolved
// like nnU-Net's PlansManager, pre-2.4 configurations (UNet_class_name & co.) are converted, and the
// raw JSON is kept so unknown keys survive a load/save round trip.
// medseg's own additions live under the key "medseg" inside each configuration (nnU-Net ignores it).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.h"

namespace medseg::planning {

// MONAI SwinUNETR hyper-parameters (network_class_name "medseg.SwinUNETR").
struct SwinPlan {
  int feature_size = 24;  // MONAI's default, what models builds when the key is absent
  std::vector<int> depths{2, 2, 2, 2};
  std::vector<int> num_heads{3, 6, 12, 24};
  int window_size = 7;
  int patch_size = 2;
  bool use_v2 = false;
  bool use_checkpoint = false;
  bool normalize = true;
  double drop_rate = 0.0, attn_drop_rate = 0.0, dropout_path_rate = 0.0;
};

// dynamic-network-architectures' Primus (the network of nnU-Net's Primus trainers; models/primus.h), named
// ...architectures.primus.Primus, PrimusV2 or PrimusV3. input_shape is the configuration's patch_size (the token
// grid the position embedding is built for); arch_kwargs may name it too, then it must be the patch size.
struct PrimusPlan {
  int embed_dim = 0, eva_depth = 24, eva_numheads = 16;
  std::vector<int> patch_embed_size{8, 8, 8};
  std::vector<int> input_shape;
  double mlp_ratio = 4.0 * 2 / 3, drop_path_rate = 0.0;
  std::optional<double> init_values;
  bool scale_attn_inner = false, use_rot_pos_emb = true, use_abs_pos_embed = true;
  int num_register_tokens = 0;
  // The patch embedding. Empty embed_channels: Primus's one strided convolution (PatchEmbed). Otherwise V2's and
  // V3's residual one (PatchEmbed_deeper, PatchEmbedDeeperControlled): a stem of one BasicBlockD to
  // embed_channels[0] at full resolution, then per level a stride-2 stage of embed_depths[l] blocks to
  // embed_channels[l + 1], a 1x1x1 convolution to embed_dim, and with embed_add_skips (V3) every level but the
  // last projected onto the token grid, scaled by a learned factor and added. 2^levels is the patch_embed_size.
  std::vector<int> embed_channels, embed_depths;
  bool embed_leaky_relu = false;  // V3's LeakyReLU(0.01); V2's blocks use ReLU
  bool embed_add_skips = false;
  bool residual_embedding() const { return !embed_channels.empty(); }
};

// Sets p's embed_* fields to dynamic-network-architectures' residual patch embedding of PrimusV2 (PatchEmbed_deeper:
// 32, 32, 64, 128, ReLU) or PrimusV3 (PatchEmbedDeeperControlled's defaults: 32, 64, 256, 1024, LeakyReLU, skips);
// `version` 2 or 3, else medseg::Error.
void set_residual_embedding(PrimusPlan& p, int version);

// PrimusX's sizes (dynamic-network-architectures' _PRIMUS_CONFIGS), which nnU-Net's Primus trainers and the named
// networks PrimusS/B/M/L use: "S", "B", "M", "L"; nullopt for another letter.
struct PrimusSize {
  int embed_dim, eva_depth, eva_numheads;
};
std::optional<PrimusSize> primus_size(const std::string& letter);

struct ArchitecturePlan {
  std::string network_class_name;  // as written, e.g. dynamic_network_architectures.architectures.unet.PlainConvUNet
  std::string short_name;          // the part after the last '.', e.g. PlainConvUNet
  int dim = 3;                     // 2 or 3, from conv_op (or the kernel sizes)
  int n_stages = 0;
  std::vector<int> features_per_stage;
  std::vector<std::vector<int>> kernel_sizes, strides;  // scalars in the file are expanded to dim
  std::vector<int> n_conv_per_stage;                    // PlainConvUNet
  std::vector<int> n_blocks_per_stage;                  // ResidualEncoderUNet
  std::vector<int> n_conv_per_stage_decoder;
  bool conv_bias = true;
  std::string conv_op, norm_op, dropout_op, nonlin;  // dropout_op empty for None
  json norm_op_kwargs, dropout_op_kwargs, nonlin_kwargs;
  double norm_eps = 1e-5;
  bool norm_affine = false;  // torch's default: false for InstanceNorm, true for BatchNorm
  double nonlin_negative_slope = 0.01;
  bool nonlin_inplace = true;
  double dropout_p = 0.0;            // dropout_op_kwargs.p (torch's 0.5 when absent); 0 without dropout_op
  std::string block;                 // ResidualEncoderUNet's block class; empty: BasicBlockD
  std::optional<int> stem_channels;  // ResidualEncoderUNet; absent: features_per_stage[0]
  bool nonlin_first = false;
  std::vector<std::string> kw_requires_import;
  std::optional<SwinPlan> swin;      // set for medseg.SwinUNETR
  std::optional<PrimusPlan> primus;  // set for Primus
  json raw;                          // the whole "architecture" object

  bool is_plain_unet() const { return short_name == "PlainConvUNet"; }
  bool is_residual_encoder_unet() const { return short_name == "ResidualEncoderUNet"; }
  bool is_swin_unetr() const { return swin.has_value(); }
  bool is_primus() const { return primus.has_value(); }
  // Encoder blocks per stage, whichever of n_conv_per_stage / n_blocks_per_stage applies.
  const std::vector<int>& encoder_blocks() const {
    return n_blocks_per_stage.empty() ? n_conv_per_stage : n_blocks_per_stage;
  }
};

// The keyword arguments of nnU-Net's resampling functions: resample_data_or_seg_to_shape (order, order_z)
// and resample_torch_fornnunet (memefficient_seg_resampling, mode, aniso_axis_mode); both take the rest.
struct ResamplingKwargs {
  bool is_seg = false;
  int order = 3;
  int order_z = 0;
  std::optional<bool> force_separate_z;          // null in the file = decide from the spacing
  double separate_z_anisotropy_threshold = 3.0;  // nnU-Net's ANISO_THRESHOLD
  bool memefficient_seg_resampling = false;
  std::string mode = "linear";                    // torch: in-plane (or everywhere without separate z)
  std::string aniso_axis_mode = "nearest-exact";  // torch: along the separate axis
  json raw;
};

// medseg additions stored under configuration["medseg"].
struct MedsegConfigExtras {
  std::optional<int64_t> estimated_peak_bytes;
  std::string memory_model;  // "proxy" or "bytes" (how the patch/batch were chosen)
  json memory;               // full estimate with breakdown (MemoryEstimate::to_json)
};

struct ConfigurationPlan {
  std::string name;
  std::string data_identifier;
  std::string preprocessor_name;
  int batch_size = 2;
  std::vector<int> patch_size;
  std::vector<double> median_image_size_in_voxels;
  std::vector<double> spacing;
  std::vector<std::string> normalization_schemes;
  std::vector<bool> use_mask_for_norm;
  std::string resampling_fn_data, resampling_fn_seg, resampling_fn_probabilities;
  ResamplingKwargs resampling_fn_data_kwargs, resampling_fn_seg_kwargs, resampling_fn_probabilities_kwargs;
  bool batch_dice = false;
  std::string inherits_from;            // empty when the configuration is stand-alone
  std::string previous_stage;           // cascade: configuration whose predictions are an input
  std::vector<std::string> next_stage;  // "next_stage" may be a string or a list in the file
  ArchitecturePlan architecture;
  MedsegConfigExtras medseg;
  json raw;  // resolved configuration (inheritance applied) as JSON

  int dim() const { return static_cast<int>(patch_size.size()); }
};

struct Plans {
  std::string dataset_name;
  std::string plans_name;
  std::vector<double> original_median_spacing_after_transp;
  std::vector<int> original_median_shape_after_transp;
  std::string image_reader_writer;
  std::vector<int> transpose_forward, transpose_backward;
  std::string experiment_planner_used;
  std::string label_manager;
  json foreground_intensity_properties_per_channel;
  std::map<std::string, ConfigurationPlan> configurations;  // all resolved
  json raw;
  std::string source;

  std::vector<std::string> configuration_names() const;
  bool has_configuration(const std::string& name) const { return configurations.count(name) > 0; }
  // Throws Error naming the plans file and listing the available configurations.
  const ConfigurationPlan& configuration(const std::string& name) const;
};

Plans plans_from_json(const json& j, const std::string& source_name);
Plans load_plans(const std::string& path);
// Back to nnU-Net's layout: raw JSON with the typed fields written over it; configurations that
// inherit keep only the keys that differ from their parent.
json plans_to_json(const Plans& plans);
json configuration_to_json(const ConfigurationPlan& c);  // resolved (no inheritance)

// configurations[name] with its inherits_from chain merged like nnU-Net's PlansManager: shallow, the
// child's keys win (its "inherits_from" stays). The one resolver of medseg: plans_from_json and
// models::plan_network_spec use it. Throws FileError naming `source` for an unknown configuration, a
// non-object or a cycle.
json resolve_configuration(const json& configurations, const std::string& name, const std::string& source);

// The one arch_kwargs parser: plans_from_json and models::build_network read the architecture block
// through it. `source` names the file in error messages, `scope` the place inside it (e.g.
// "configuration '2d'").
ArchitecturePlan architecture_from_json(const json& arch, const std::string& source, const std::string& scope = "");
ConfigurationPlan configuration_from_json(const json& resolved, const std::string& name, const std::string& source);

}  // namespace medseg::planning
