// nnUNetv2_preprocess_like_nnssl's plans (lib/planning/plans_like_nnssl.h) against what nnU-Net master's
// like_nnssl.py writes, by hand: for the hippocampus plans with 2 channels at 2 x 0.8 x 0.8 mm and an nnssl
// ResEncL checkpoint pretrained at 1 mm on 160^3 patches.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "planning/plans_like_nnssl.h"
#include "plans/plans.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::planning;

namespace {

ordered_json base_plans() {
  ordered_json p = read_ordered_json(test::source_path("tests/data/planning/nnUNetPlans_hippocampus.json"));
  auto& c = p["configurations"]["3d_fullres"];
  c["spacing"] = {2.0, 0.8, 0.8};
  c["normalization_schemes"] = {"CTNormalization", "ZScoreNormalization"};
  c["use_mask_for_norm"] = {false, false};
  return p;
}

// An nnssl adaptation plan as AdaptationPlan.serialize() lays it out (the fields nnU-Net reads).
json adaptation_plan(const json& pretrain_spacing) {
  return {{"architecture_plans",
           {{"arch_class_name", "ResEncL"}, {"arch_kwargs", nullptr}, {"arch_kwargs_requiring_import", nullptr}}},
          {"pretrain_plan",
           {{"dataset_name", "Dataset745_OpenNeuro"},
            {"configurations", {{"onemmiso", {{"spacing", pretrain_spacing}, {"patch_size", {160, 160, 160}}}}}}}},
          {"pretrain_num_input_channels", 1},
          {"recommended_downstream_patchsize", {160, 160, 160}},
          {"key_to_encoder", "encoder.stages"},
          {"key_to_stem", "encoder.stem"},
          {"keys_to_in_proj", {"encoder.stem.convs.0.conv", "encoder.stem.convs.0.all_modules.0"}},
          {"key_to_lpe", nullptr}};
}

PlansLikeNnssl options(NnsslSpacing s, std::vector<double> fixed = {}) {
  PlansLikeNnssl o;
  o.pretraining_name = "OpenMindMAE";
  o.checkpoint_path = "/models/mae.pth";
  o.spacing = s;
  o.fixed_spacing = std::move(fixed);
  return o;
}

}  // namespace

TEST(PlansLikeNnssl, LikePretrainedTakesThePretrainingsSpacingArchitectureAndPatch) {
  const json cites = json::array({{{"type", "pretraining"}, {"name", "MAE"}}});
  const json p = json(plans_like_nnssl(base_plans(), "base.json", adaptation_plan({1, 1, 1}), cites,
                                       options(NnsslSpacing::LikePretrained)));
  const std::string id = "Spacing__1.00_1.00_1.00___Norm__Z_Z";
  EXPECT_EQ(p["plans_name"], "ptPlans__OpenMindMAE____" + id);
  ASSERT_EQ(p["configurations"].size(), 1u);  // 3d_fullres alone
  const auto& c = p["configurations"]["3d_fullres"];
  EXPECT_EQ(c["data_identifier"], id);
  EXPECT_EQ(c["spacing"], json({1, 1, 1}));
  EXPECT_EQ(c["batch_size"], 2);
  EXPECT_EQ(c["patch_size"], json({160, 160, 160}));
  EXPECT_EQ(c["normalization_schemes"], json({"ZScoreNormalization", "ZScoreNormalization"}));
  EXPECT_EQ(c["use_mask_for_norm"], json({false, false}));
  EXPECT_EQ(c["preprocessor_name"], "DefaultPreprocessor");
  EXPECT_EQ(c["architecture"]["network_class_name"], "ResEncL");
  EXPECT_TRUE(c["architecture"]["arch_kwargs"].is_null());
  const auto& info = p["pretrain_info"];
  EXPECT_EQ(info["checkpoint_path"], "/models/mae.pth");
  EXPECT_EQ(info["checkpoint_name"], "OpenMindMAE");
  EXPECT_EQ(info["key_to_stem"], "encoder.stem");
  EXPECT_EQ(info["keys_to_in_proj"].size(), 2u);
  EXPECT_EQ(info["pt_num_in_channels"], 1);
  EXPECT_EQ(info["pt_used_patchsize"], json({160, 160, 160}));
  EXPECT_EQ(info["pt_recommended_downstream_patchsize"], json({160, 160, 160}));
  EXPECT_EQ(info["citations"], cites);
  EXPECT_EQ(p["dataset_name"], json(base_plans()["dataset_name"]));
  // The plans read: ResEncL is built for the 160^3 patch, batch 2.
  const Plans read = plans_from_json(p, "pt.json");
  EXPECT_TRUE(read.configuration("3d_fullres").architecture.is_residual_encoder_unet());
  EXPECT_EQ(read.configuration("3d_fullres").batch_size, 2);
}

TEST(PlansLikeNnssl, OtherSpacingModes) {
  auto spacing_of = [](const ordered_json& p) { return json(p["configurations"]["3d_fullres"]["spacing"]); };
  EXPECT_EQ(spacing_of(plans_like_nnssl(base_plans(), "b", adaptation_plan({1, 1, 1}), json::array(),
                                        options(NnsslSpacing::DefaultNnunet))),
            json({2.0, 0.8, 0.8}));
  const ordered_json fixed = plans_like_nnssl(base_plans(), "b", adaptation_plan({1, 1, 1}), json::array(),
                                              options(NnsslSpacing::Fixed, {3, 1.5, 1.25}));
  EXPECT_EQ(spacing_of(fixed), json({3, 1.5, 1.25}));
  EXPECT_EQ(fixed["configurations"]["3d_fullres"]["data_identifier"].get<std::string>(),
            "Spacing__3.00_1.50_1.25___Norm__Z_Z");
  // A pretraining without a target spacing: nnU-Net falls back to the dataset's.
  EXPECT_EQ(spacing_of(plans_like_nnssl(base_plans(), "b", adaptation_plan(nullptr), json::array(),
                                        options(NnsslSpacing::LikePretrained))),
            json({2.0, 0.8, 0.8}));
  EXPECT_THROW(
      plans_like_nnssl(base_plans(), "b", adaptation_plan({1, 1, 1}), json::array(), options(NnsslSpacing::Fixed)),
      Error);
  EXPECT_THROW(parse_nnssl_spacing("no_resample"), Error);
  EXPECT_THROW(parse_nnssl_spacing("likepretrained"), Error);
  json bad = adaptation_plan({1, 1, 1});
  bad.erase("key_to_stem");
  try {
    plans_like_nnssl(base_plans(), "b", bad, json::array(), options(NnsslSpacing::LikePretrained));
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("/models/mae.pth"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("key_to_stem"), std::string::npos) << e.what();
  }
}
