// The planner presets shipped in plans/: each parses, and holds nnU-Net v2's own constants. The expected
// values are written here by hand from nnU-Net's source (v2.8.x):
//   ExperimentPlanner.__init__ (nnunetv2/experiment_planning/experiment_planners/default_experiment_planner.py):
//     UNet_reference_val_3d = 560000000, UNet_reference_val_2d = 85000000, UNet_reference_val_corresp_GB = 8,
//     UNet_reference_val_corresp_bs_2d = 12, _bs_3d = 2, UNet_base_num_features = 32, UNet_max_features_3d = 320,
//     UNet_max_features_2d = 512, UNet_featuremap_min_edge_length = 4, UNet_min_batch_size = 2,
//     UNet_blocks_per_stage_encoder = (2,)*14, _decoder = (2,)*13, max_dataset_covered = 0.05,
//     lowres_creation_threshold = 0.25, the 1.03 spacing step of plan_experiment, gpu_memory_target_in_gb = 8;
//     anisotropy_threshold = ANISO_THRESHOLD = 3 (nnunetv2/configuration.py).
//   residual_unets/residual_encoder_unet_planners.py: ResEncUNetPlanner reference 680000000 / 135000000,
//     blocks (1,3,4,6,6,6,6,6,6,6,6,6,6) / (1,)*12, `while estimate > reference`, nnUNetPlans_ data identifiers;
//     nnUNetPlannerResEncM 8 GB, max_dataset_covered = 1; ResEncL 24 GB, 2100000000 / 380000000;
//     ResEncXL 40 GB, 3600000000 / 560000000.
//   resampling/resample_with_torch.py: nnUNetPlanner_torchres (ExperimentPlanner), nnUNetPlannerResEncL_torchres
//     and _torchres_sepz (ResEncL), resample_torch_fornnunet with force_separate_z False, or None and
//     separate_z_anisotropy_threshold = ANISO_THRESHOLD for _sepz; own data identifiers.
// SwinUNETRPlanner is medseg's own (docs/plans.md): feature size 48, 24 below 16 GB, batch cap 0.05.
#include <gtest/gtest.h>

#include "core/data_files.h"
#include "planning/planner_specs.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::planning;

namespace {

struct ShippedPreset {
  std::string name, plans_name;
  NetworkKind network;
  double target_gb, ref_3d, ref_2d, ref_gb;
  ShrinkRule shrink;
  std::vector<int> encoder, decoder;
  double max_dataset_covered;
  bool shares_data;
};

const std::vector<int> kPlainEnc(14, 2), kPlainDec(13, 2), kResEnc{1, 3, 4, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6},
    kResDec(12, 1);
const auto kPlain = NetworkKind::PlainConvUNet, kRes = NetworkKind::ResidualEncoderUNet;

const std::vector<ShippedPreset> kUNetPresets = {
    {"ExperimentPlanner", "nnUNetPlans", kPlain, 8, 560e6, 85e6, 8, ShrinkRule::TwoSamplesOfReferenceBatch, kPlainEnc,
     kPlainDec, 0.05, false},
    {"ResEncUNetPlanner", "nnUNetResEncUNetPlans", kRes, 8, 680e6, 135e6, 8, ShrinkRule::Estimate, kResEnc, kResDec,
     0.05, true},
    {"nnUNetPlannerResEncM", "nnUNetResEncUNetMPlans", kRes, 8, 680e6, 135e6, 8, ShrinkRule::Estimate, kResEnc, kResDec,
     1, true},
    {"nnUNetPlannerResEncL", "nnUNetResEncUNetLPlans", kRes, 24, 2100e6, 380e6, 24, ShrinkRule::Estimate, kResEnc,
     kResDec, 1, true},
    {"nnUNetPlannerResEncXL", "nnUNetResEncUNetXLPlans", kRes, 40, 3600e6, 560e6, 40, ShrinkRule::Estimate, kResEnc,
     kResDec, 1, true},
    // resampling/resample_with_torch.py: their base planners' constants, their own data identifiers
    {"nnUNetPlanner_torchres", "nnUNetPlans_torchres", kPlain, 8, 560e6, 85e6, 8,
     ShrinkRule::TwoSamplesOfReferenceBatch, kPlainEnc, kPlainDec, 0.05, false},
    {"nnUNetPlannerResEncL_torchres", "nnUNetResEncUNetLPlans_torchres", kRes, 24, 2100e6, 380e6, 24,
     ShrinkRule::Estimate, kResEnc, kResDec, 1, false},
    {"nnUNetPlannerResEncL_torchres_sepz", "nnUNetResEncUNetLPlans_torchres_sepz", kRes, 24, 2100e6, 380e6, 24,
     ShrinkRule::Estimate, kResEnc, kResDec, 1, false},
};

void PrintTo(const ShippedPreset& p, std::ostream* os) { *os << p.name; }

class ShippedUNetPreset : public ::testing::TestWithParam<ShippedPreset> {};

}  // namespace

TEST_P(ShippedUNetPreset, HoldsNnunetsConstants) {
  const ShippedPreset& e = GetParam();
  const std::string path = test::source_path("plans/" + e.name + ".json");
  const PlannerSpec s = find_planner_preset(e.name);
  EXPECT_EQ(s.source, shipped_data_dir("plans") + "/" + e.name + ".json");
  EXPECT_EQ(load_planner_preset(path).name, e.name);
  EXPECT_EQ(s.name, e.name);
  EXPECT_EQ(s.experiment_planner_used, e.name);
  EXPECT_EQ(s.default_plans_name, e.plans_name);
  EXPECT_EQ(s.network, e.network);
  EXPECT_EQ(s.default_target_gb, e.target_gb);
  EXPECT_EQ(s.unet.reference.feature_maps_3d, e.ref_3d);
  EXPECT_EQ(s.unet.reference.feature_maps_2d, e.ref_2d);
  EXPECT_EQ(s.unet.reference.gpu_memory_gb, e.ref_gb);
  EXPECT_EQ(s.unet.reference.batch_size_3d, 2);
  EXPECT_EQ(s.unet.reference.batch_size_2d, 12);
  EXPECT_EQ(s.unet.shrink_while, e.shrink);
  EXPECT_EQ(s.unet.base_features, 32);
  EXPECT_EQ(s.unet.max_features_3d, 320);
  EXPECT_EQ(s.unet.max_features_2d, 512);
  EXPECT_EQ(s.unet.feature_map_min_edge, 4);
  EXPECT_EQ(s.unet.encoder_blocks, e.encoder);
  EXPECT_EQ(s.unet.decoder_convs, e.decoder);
  EXPECT_EQ(s.unet.lowres_creation_threshold, 0.25);
  EXPECT_EQ(s.unet.lowres_spacing_step, 1.03);
  EXPECT_EQ(s.min_batch, 2);
  EXPECT_EQ(s.max_dataset_covered, e.max_dataset_covered);
  EXPECT_EQ(s.anisotropy_threshold, 3.0);
  EXPECT_EQ(s.shares_default_data_identifiers, e.shares_data);
  const bool torchres = e.name.find("_torchres") != std::string::npos;
  EXPECT_EQ(s.resampling.torch, torchres);
  const bool sepz = e.name.find("_sepz") != std::string::npos;
  EXPECT_EQ(s.resampling.force_separate_z, torchres && !sepz ? std::optional<bool>(false) : std::nullopt);
  EXPECT_EQ(s.resampling.separate_z_anisotropy_threshold, sepz ? std::optional<double>(3.0) : std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Plans, ShippedUNetPreset, ::testing::ValuesIn(kUNetPresets),
                         [](const auto& row) { return row.param.name; });

TEST(ShippedPresets, SwinUNETRPlanner) {
  const PlannerSpec s = find_planner_preset("SwinUNETRPlanner");
  EXPECT_EQ(s.default_plans_name, "medsegSwinUNETRPlans");
  EXPECT_EQ(s.network, NetworkKind::SwinUNETR);
  EXPECT_EQ(s.default_target_gb, 8.0);
  EXPECT_EQ(s.swin.feature_size, 48);
  EXPECT_EQ(s.swin.small_target_feature_size, 24);
  EXPECT_EQ(s.swin.small_target_below_gb, 16.0);
  EXPECT_EQ(s.min_batch, 2);
  EXPECT_EQ(s.max_dataset_covered, 0.05);
  EXPECT_EQ(s.anisotropy_threshold, 3.0);
  EXPECT_FALSE(s.shares_default_data_identifiers);  // its own data identifiers (issue 26)
}

TEST(ShippedPresets, PlansFolderHoldsExactlyTheKnownPresets) {
  EXPECT_EQ(
      named_jsons({shipped_data_dir("plans")}),
      (std::vector<std::string>{"ExperimentPlanner", "ResEncUNetPlanner", "SwinUNETRPlanner", "nnUNetPlannerResEncL",
                                "nnUNetPlannerResEncL_torchres", "nnUNetPlannerResEncL_torchres_sepz",
                                "nnUNetPlannerResEncM", "nnUNetPlannerResEncXL", "nnUNetPlanner_torchres"}));
}

// The optional keys take nnU-Net's values, so a minimal user preset is an nnU-Net planner.
TEST(ShippedPresets, OmittedOptionalKeysTakeNnunetsDefaults) {
  const json minimal = {
      {"format_version", 1},
      {"name", "Minimal"},
      {"default_plans_name", "MinimalPlans"},
      {"network", "PlainConvUNet"},
      {"gpu_memory_target_gb", 8},
      {"reference", {{"feature_maps_3d", 560000000}, {"feature_maps_2d", 85000000}, {"gpu_memory_gb", 8}}},
      {"shrink_while", "2*estimate/reference_batch > reference"},
      {"blocks_per_stage", {{"encoder", kPlainEnc}, {"decoder", kPlainDec}}},
      {"batch", {{"max_dataset_covered", 0.05}}}};
  const PlannerSpec s = planner_preset_from_json(minimal, "minimal.json");
  EXPECT_EQ(s.experiment_planner_used, "Minimal");
  EXPECT_EQ(s.unet.reference.batch_size_3d, 2);
  EXPECT_EQ(s.unet.reference.batch_size_2d, 12);
  EXPECT_EQ(s.unet.base_features, 32);
  EXPECT_EQ(s.unet.max_features_3d, 320);
  EXPECT_EQ(s.unet.max_features_2d, 512);
  EXPECT_EQ(s.unet.feature_map_min_edge, 4);
  EXPECT_EQ(s.unet.lowres_creation_threshold, 0.25);
  EXPECT_EQ(s.unet.lowres_spacing_step, 1.03);
  EXPECT_EQ(s.min_batch, 2);
  EXPECT_EQ(s.anisotropy_threshold, 3.0);
  EXPECT_FALSE(s.shares_default_data_identifiers);
}
