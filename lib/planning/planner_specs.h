#pragma once
// Planner presets: what makes ExperimentPlanner, the ResEnc planners and SwinUNETRPlanner differ, read
// from versioned JSON files (plans/<name>.json, format in docs/planner_presets.md). The shipped files
// hold nnU-Net v2.8's own constants, so nnU-Net's planner names plan exactly as nnU-Net does; a user adds
// a preset by writing a file, without recompiling.
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.h"

namespace medseg::planning {

enum class NetworkKind { PlainConvUNet, ResidualEncoderUNet, SwinUNETR };

// How nnU-Net's shrink loop compares its feature-map count with the reference.
enum class ShrinkRule {
  TwoSamplesOfReferenceBatch,  // ExperimentPlanner: while 2*estimate/reference_batch > reference
  Estimate,                    // ResEnc planners:   while estimate > reference
};

// nnU-Net's VRAM proxy budget: a feature-map count that fits a GPU of `gpu_memory_gb` with the reference
// batch (UNet_reference_val_3d/_2d, UNet_reference_val_corresp_GB, UNet_reference_val_corresp_bs_3d/_2d).
struct ProxyReference {
  double feature_maps_3d = 0, feature_maps_2d = 0;
  double gpu_memory_gb = 8;
  int batch_size_3d = 2, batch_size_2d = 12;
};

// The U-Net planners (PlainConvUNet, ResidualEncoderUNet).
struct UNetPreset {
  ProxyReference reference;
  ShrinkRule shrink_while = ShrinkRule::TwoSamplesOfReferenceBatch;
  int base_features = 32, max_features_3d = 320, max_features_2d = 512;  // min(max, base * 2^stage)
  int feature_map_min_edge = 4;                                          // UNet_featuremap_min_edge_length
  std::vector<int> encoder_blocks, decoder_convs;                        // per stage; the decoder has one stage fewer
  double lowres_creation_threshold = 0.25;  // 3d_lowres while fullres patch < this part of the median
  double lowres_spacing_step = 1.03;        // 3d_lowres spacing growth per step
};

// SwinUNETRPlanner (medseg's own): the feature size, smaller for small memory targets.
struct SwinPreset {
  int feature_size = 48;
  int small_target_feature_size = 24;
  double small_target_below_gb = 16;
};

// Which of nnU-Net's resampling functions the planned configurations name (determine_resampling and
// determine_segmentation_softmax_export_fn), with the kwargs the planner writes for it.
struct ResamplingPreset {
  bool torch = false;                    // resample_torch_fornnunet; else resample_data_or_seg_to_shape
  std::optional<bool> force_separate_z;  // written as is (null: decided from the spacings)
  std::optional<double> separate_z_anisotropy_threshold;  // written when the preset gives it
};

struct PlannerSpec {
  std::string name;                     // the -pl name
  std::string experiment_planner_used;  // written into the plans (nnU-Net's class name)
  std::string default_plans_name;
  std::string description;
  std::string source;  // the file it was read from
  NetworkKind network = NetworkKind::PlainConvUNet;
  double default_target_gb = 8;
  double anisotropy_threshold = 3;  // nnU-Net's ANISO_THRESHOLD (target spacing)
  int min_batch = 2;
  double max_dataset_covered = 0.05;             // batch cap: this part of the dataset's voxels per step
  bool shares_default_data_identifiers = false;  // 2d/3d_fullres reuse nnUNetPlans' preprocessed data
  ResamplingPreset resampling;
  UNetPreset unet;  // read for the U-Net networks
  SwinPreset swin;  // read for SwinUNETR
};

constexpr int kPlannerPresetFormatVersion = 1;

// Validates every key and range; errors name `source` and the key.
PlannerSpec planner_preset_from_json(const json& j, const std::string& source);
PlannerSpec load_planner_preset(const std::string& path);

// Where `-pl NAME` looks for NAME.json, in order: `presets_dir` (--presets), $MEDSEG_PLANS_PRESETS, then
// medseg's plans/ folder.
std::vector<std::string> planner_preset_dirs(const std::string& presets_dir = "");

// `name_or_path` is a preset name or a path to a .json file (anything ending in .json or holding a '/').
// An unknown name throws Error listing the known presets.
PlannerSpec find_planner_preset(const std::string& name_or_path, const std::string& presets_dir = "");

}  // namespace medseg::planning
