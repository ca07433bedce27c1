// Reading nnU-Net plans.json files into the typed structs, inheritance, and round trips.
// The fixture tests/data/planning/nnUNetPlans_hippocampus.json was written by nnU-Net's own planner
// (tests/data/planning/nnunet/make_golden.py; planning_nnunet_golden_test.cpp checks medseg's planner
// against it).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "plans/plans.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::planning;

namespace {
std::string fixture_path() { return test::source_path("tests/data/planning/nnUNetPlans_hippocampus.json"); }
const std::string kFixture = fixture_path();

json with_custom_configuration() {
  json j = read_json(kFixture);
  j["configurations"]["3d_fullres_bs4"] = {{"inherits_from", "3d_fullres"}, {"batch_size", 4}, {"my_key", "kept"}};
  j["configurations"]["3d_fullres_bs4_big"] = {{"inherits_from", "3d_fullres_bs4"}, {"patch_size", {48, 64, 48}}};
  j["some_future_key"] = {1, 2, 3};
  return j;
}
}  // namespace

TEST(PlanningPlans, LoadsNnunetFileIntoTypedStructs) {
  const Plans p = load_plans(kFixture);
  EXPECT_EQ(p.dataset_name, "Dataset004_Hippocampus");
  EXPECT_EQ(p.plans_name, "nnUNetPlans");
  EXPECT_EQ(p.transpose_forward, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.original_median_shape_after_transp, (std::vector<int>{36, 50, 35}));
  EXPECT_EQ(p.configuration_names(), (std::vector<std::string>{"2d", "3d_fullres"}));
  const ConfigurationPlan& c = p.configuration("3d_fullres");
  EXPECT_EQ(c.batch_size, 9);
  EXPECT_EQ(c.patch_size, (std::vector<int>{40, 56, 40}));
  EXPECT_EQ(c.median_image_size_in_voxels, (std::vector<double>{36, 50, 35}));
  EXPECT_EQ(c.spacing, (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(c.normalization_schemes, (std::vector<std::string>{"ZScoreNormalization"}));
  EXPECT_EQ(c.use_mask_for_norm, (std::vector<bool>{false}));
  EXPECT_FALSE(c.batch_dice);
  EXPECT_EQ(c.resampling_fn_data_kwargs.order, 3);
  EXPECT_TRUE(c.resampling_fn_seg_kwargs.is_seg);
  EXPECT_FALSE(c.resampling_fn_seg_kwargs.force_separate_z.has_value());
  EXPECT_EQ(c.resampling_fn_probabilities_kwargs.order, 1);
  const ArchitecturePlan& a = c.architecture;
  EXPECT_EQ(a.short_name, "PlainConvUNet");
  EXPECT_TRUE(a.is_plain_unet());
  EXPECT_EQ(a.dim, 3);
  EXPECT_EQ(a.n_stages, 4);
  EXPECT_EQ(a.features_per_stage, (std::vector<int>{32, 64, 128, 256}));
  EXPECT_EQ(a.strides[1], (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(a.encoder_blocks(), (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(a.n_conv_per_stage_decoder, (std::vector<int>{2, 2, 2}));
  EXPECT_TRUE(a.conv_bias);
  EXPECT_DOUBLE_EQ(a.norm_eps, 1e-5);
  EXPECT_TRUE(a.norm_affine);
  EXPECT_TRUE(a.nonlin_inplace);
  EXPECT_DOUBLE_EQ(a.nonlin_negative_slope, 0.01);
  EXPECT_TRUE(a.dropout_op.empty());
  EXPECT_EQ(p.configuration("2d").architecture.dim, 2);
}

TEST(PlanningPlans, InheritanceIsResolvedLikeNnunet) {
  const Plans p = plans_from_json(with_custom_configuration(), "custom.json");
  const auto& c = p.configuration("3d_fullres_bs4");
  EXPECT_EQ(c.batch_size, 4);
  EXPECT_EQ(c.patch_size, (std::vector<int>{40, 56, 40}));
  EXPECT_EQ(c.inherits_from, "3d_fullres");
  EXPECT_EQ(c.raw["my_key"], "kept");
  const auto& big = p.configuration("3d_fullres_bs4_big");  // two levels
  EXPECT_EQ(big.batch_size, 4);
  EXPECT_EQ(big.patch_size, (std::vector<int>{48, 64, 48}));
  EXPECT_EQ(big.architecture.n_stages, 4);
}

TEST(PlanningPlans, UnknownConfigurationListsTheAvailableOnes) {
  const Plans p = load_plans(kFixture);
  try {
    p.configuration("3d_lowres");
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("3d_lowres"), std::string::npos);
    EXPECT_NE(m.find("2d, 3d_fullres"), std::string::npos);
    EXPECT_NE(m.find("nnUNetPlans_hippocampus.json"), std::string::npos);
  }
}

TEST(PlanningPlans, CircularInheritanceIsAnError) {
  json j = read_json(kFixture);
  j["configurations"]["a"] = {{"inherits_from", "b"}};
  j["configurations"]["b"] = {{"inherits_from", "a"}};
  EXPECT_THROW(plans_from_json(j, "loop.json"), FileError);
}

TEST(PlanningPlans, RoundTripIsUnchanged) {
  const json fixture = read_json(kFixture);
  EXPECT_EQ(plans_to_json(plans_from_json(fixture, "f")), fixture);
  const json custom = with_custom_configuration();
  const json back = plans_to_json(plans_from_json(custom, "c"));
  EXPECT_EQ(back, custom);
  EXPECT_EQ(back.dump(), custom.dump());  // ints stay ints, floats stay floats
}

// nnU-Net's torch-resampling plans (the *_torchres planners) come back as written: their kwargs take no
// `order` (resample_torch_fornnunet would refuse one), and their own keys are read.
TEST(PlanningPlans, TorchResamplingKwargsRoundTrip) {
  json j = read_json(kFixture);
  json& c = j["configurations"]["3d_fullres"];
  c["resampling_fn_data"] = "resample_torch_fornnunet";
  c["resampling_fn_data_kwargs"] = json::parse(
      R"({"is_seg": false, "force_separate_z": null, "memefficient_seg_resampling": true,
          "separate_z_anisotropy_threshold": 2.5})");
  const Plans p = plans_from_json(j, "torchres.json");
  const ResamplingKwargs& k = p.configuration("3d_fullres").resampling_fn_data_kwargs;
  EXPECT_TRUE(k.memefficient_seg_resampling);
  EXPECT_EQ(k.separate_z_anisotropy_threshold, 2.5);
  EXPECT_FALSE(k.force_separate_z.has_value());
  EXPECT_EQ(k.mode, "linear");
  const json back = plans_to_json(p);
  EXPECT_EQ(back, j);
  EXPECT_FALSE(back["configurations"]["3d_fullres"]["resampling_fn_data_kwargs"].contains("order"));
  // A changed value is written back; an unchanged default is not added.
  Plans q = p;
  q.configurations.at("3d_fullres").resampling_fn_data_kwargs.memefficient_seg_resampling = false;
  const json kw = plans_to_json(q)["configurations"]["3d_fullres"]["resampling_fn_data_kwargs"];
  EXPECT_EQ(kw["memefficient_seg_resampling"], false);
  EXPECT_FALSE(kw.contains("mode"));
  EXPECT_FALSE(kw.contains("order_z"));
  c["resampling_fn_data_kwargs"]["separate_z_anisotropy_threshold"] = -1;
  EXPECT_THROW(plans_from_json(j, "torchres.json"), Error);
}

TEST(PlanningPlans, EditedFieldsAreWrittenBack) {
  Plans p = plans_from_json(with_custom_configuration(), "c");
  p.configurations.at("3d_fullres").batch_size = 7;
  const json back = plans_to_json(p);
  EXPECT_EQ(back["configurations"]["3d_fullres"]["batch_size"], 7);
  EXPECT_EQ(back["configurations"]["3d_fullres_bs4"]["batch_size"], 4);  // the child's own value
  EXPECT_FALSE(back["configurations"]["3d_fullres_bs4"].contains("patch_size"));
}

TEST(PlanningPlans, LegacyFlatArchitectureIsConverted) {
  json j = read_json(kFixture);
  json& c = j["configurations"]["3d_fullres"];
  c.erase("architecture");
  c["UNet_class_name"] = "PlainConvUNet";
  c["UNet_base_num_features"] = 32;
  c["unet_max_num_features"] = 320;
  c["n_conv_per_stage_encoder"] = {2, 2, 2, 2};
  c["n_conv_per_stage_decoder"] = {2, 2, 2};
  c["num_pool_per_axis"] = {3, 3, 3};
  c["pool_op_kernel_sizes"] = {{1, 1, 1}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}};
  c["conv_kernel_sizes"] = {{3, 3, 3}, {3, 3, 3}, {3, 3, 3}, {3, 3, 3}};
  const Plans p = plans_from_json(j, "old.json");
  const auto& a = p.configuration("3d_fullres").architecture;
  EXPECT_EQ(a.features_per_stage, (std::vector<int>{32, 64, 128, 256}));
  EXPECT_EQ(a.conv_op, "torch.nn.modules.conv.Conv3d");
  EXPECT_EQ(a.n_conv_per_stage, (std::vector<int>{2, 2, 2, 2}));
}

TEST(PlanningPlans, BadFieldNamesFileConfigurationAndKey) {
  json j = read_json(kFixture);
  j["configurations"]["3d_fullres"]["patch_size"] = "big";
  try {
    plans_from_json(j, "/p/plans.json");
    FAIL();
  } catch (const FileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/p/plans.json"), std::string::npos);
    EXPECT_NE(m.find("3d_fullres"), std::string::npos);
    EXPECT_NE(m.find("patch_size"), std::string::npos);
  }
}

// PrimusV2 and PrimusV3 (dynamic-network-architectures' residual patch embeddings): V2 has PatchEmbed_deeper's
// fixed channels (32, 32, 64, 128) and ReLU; V3 reads depth_per_level, ch_per_level and add_skips with
// PatchEmbedDeeperControlled's defaults; three levels of stride 2 need patches of 8; the preset subclasses
// (PrimusV2S, ...) are refused naming the classes that are built.
TEST(PlanningPlans, PrimusV2AndV3ReadTheirResidualPatchEmbeddings) {
  auto arch = [](const std::string& cls, json kwargs) {
    kwargs["embed_dim"] = 96;
    kwargs["eva_numheads"] = 4;
    return architecture_from_json(
        {{"network_class_name", "dynamic_network_architectures.architectures.primus." + cls}, {"arch_kwargs", kwargs}},
        "/p/plans.json");
  };
  const ArchitecturePlan v1 = arch("Primus", json::object());
  ASSERT_TRUE(v1.primus);
  EXPECT_FALSE(v1.primus->residual_embedding());
  const ArchitecturePlan v2 = arch("PrimusV2", json::object());
  ASSERT_TRUE(v2.primus);
  EXPECT_EQ(v2.primus->embed_channels, (std::vector<int>{32, 32, 64, 128}));
  EXPECT_EQ(v2.primus->embed_depths, (std::vector<int>{1, 1, 1}));
  EXPECT_FALSE(v2.primus->embed_leaky_relu);
  EXPECT_FALSE(v2.primus->embed_add_skips);
  const ArchitecturePlan v3 = arch("PrimusV3", json::object());
  EXPECT_EQ(v3.primus->embed_channels, (std::vector<int>{32, 64, 256, 1024}));
  EXPECT_TRUE(v3.primus->embed_leaky_relu);
  EXPECT_TRUE(v3.primus->embed_add_skips);
  const ArchitecturePlan own = arch("PrimusV3", {{"depth_per_level", {1, 2}},
                                                 {"ch_per_level", {8, 16, 24}},
                                                 {"add_skips", false},
                                                 {"patch_embed_size", {4, 4, 4}}});
  EXPECT_EQ(own.primus->embed_channels, (std::vector<int>{8, 16, 24}));
  EXPECT_EQ(own.primus->embed_depths, (std::vector<int>{1, 2}));
  EXPECT_FALSE(own.primus->embed_add_skips);

  auto error = [&](const std::string& cls, const json& kwargs) -> std::string {
    try {
      arch(cls, kwargs);
    } catch (const FileError& e) { return e.what(); }
    return "no error";
  };
  EXPECT_NE(error("PrimusV2", {{"patch_embed_size", {4, 4, 4}}}).find("must be [8,8,8]"), std::string::npos);
  EXPECT_NE(error("PrimusV3", {{"depth_per_level", {1, 1}}}).find("ch_per_level"), std::string::npos);
  EXPECT_NE(error("PrimusV3", {{"ch_per_level", {8, 0, 16, 32}}}).find("ch_per_level"), std::string::npos);
  const std::string preset = error("PrimusV2S", json::object());
  EXPECT_NE(preset.find("/p/plans.json"), std::string::npos) << preset;
  EXPECT_NE(preset.find("Primus, PrimusV2, PrimusV3 and the presets PrimusS, PrimusB, PrimusM and PrimusL are built"),
            std::string::npos)
      << preset;
}
