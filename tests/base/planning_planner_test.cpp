// Golden tests of the nnU-Net-identical planner. Expected values are the worked examples in the
// reference notes (checked against nnU-Net's planner) or derived by hand in the comments.
#include <gtest/gtest.h>

#include <array>

#include "core/error.h"
#include "planning/planner.h"
#include "planning_fixtures.h"

using namespace medseg;
using namespace medseg::planning;
using medseg::test::dataset_json;
using medseg::test::uniform_fingerprint;

namespace {

ordered_json plan(const json& fp, const json& ds, const std::string& planner,
                  const std::string& name = "Dataset999_X") {
  PlannerOptions o;
  o.planner = planner;
  o.dataset_name = name;
  return plan_experiment(fingerprint_from_json(fp, "fp.json"), dataset_json_from_json(ds, "dataset.json"), o);
}

std::vector<int> ints(const ordered_json& j) { return j.get<std::vector<int>>(); }

const json kHippoFp = uniform_fingerprint({1, 1, 1}, {36, 50, 35}, 260);
const json kHippoDs = dataset_json({"MRI"}, 3, 260);
const json kIsoFp = uniform_fingerprint({1, 1, 1}, {400, 400, 400}, 50);
const json kIsoDs = dataset_json({"CT"}, 14, 50);
const json kCtFp = uniform_fingerprint({2.5, 0.8, 0.8}, {150, 400, 400}, 50);
const json kCtDs = dataset_json({"CT"}, 4, 50);

}  // namespace

TEST(PlanningPlanner, HippocampusDefault) {
  const auto p = plan(kHippoFp, kHippoDs, "ExperimentPlanner");
  const auto& f = p["configurations"]["3d_fullres"];
  EXPECT_EQ(ints(f["patch_size"]), (std::vector<int>{40, 56, 40}));
  EXPECT_EQ(f["batch_size"], 9);  // 5% cap: 16.38M * 0.05 / 89,600 = 9.14
  EXPECT_EQ(f["batch_dice"], false);
  EXPECT_EQ(f["data_identifier"], "nnUNetPlans_3d_fullres");
  const auto& d2 = p["configurations"]["2d"];
  EXPECT_EQ(ints(d2["patch_size"]), (std::vector<int>{56, 40}));
  EXPECT_EQ(d2["batch_size"], 366);
  EXPECT_EQ(d2["batch_dice"], true);
  EXPECT_FALSE(p["configurations"].contains("3d_lowres"));
  EXPECT_EQ(p["plans_name"], "nnUNetPlans");
  EXPECT_EQ(p["experiment_planner_used"], "ExperimentPlanner");
  EXPECT_EQ(p["image_reader_writer"], "SimpleITKIO");
  EXPECT_EQ(ints(p["transpose_forward"]), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(f["normalization_schemes"][0], "ZScoreNormalization");
  EXPECT_EQ(f["use_mask_for_norm"][0], false);  // relative size 1.0 >= 0.75
}

TEST(PlanningPlanner, HippocampusResEncPresetsHaveNoDatasetCap) {
  const int expected[] = {58, 178, 183};
  const char* names[] = {"nnUNetPlannerResEncM", "nnUNetPlannerResEncL", "nnUNetPlannerResEncXL"};
  for (int i = 0; i < 3; ++i) {
    const auto p = plan(kHippoFp, kHippoDs, names[i]);
    const auto& f = p["configurations"]["3d_fullres"];
    EXPECT_EQ(ints(f["patch_size"]), (std::vector<int>{40, 56, 40})) << names[i];
    EXPECT_EQ(f["batch_size"], expected[i]) << names[i];
    EXPECT_EQ(f["data_identifier"], "nnUNetPlans_3d_fullres") << names[i];  // shared with nnUNetPlans
    EXPECT_EQ(f["architecture"]["network_class_name"],
              "dynamic_network_architectures.architectures.unet.ResidualEncoderUNet");
    EXPECT_TRUE(f["architecture"]["arch_kwargs"].contains("n_blocks_per_stage"));
  }
}

TEST(PlanningPlanner, Isotropic400CubePatchesPerPlanner) {
  struct Case {
    const char* planner;
    std::vector<int> patch;
    int bs;
  };
  const Case cases[] = {{"ExperimentPlanner", {128, 128, 128}, 2},
                        {"nnUNetPlannerResEncM", {128, 128, 128}, 2},
                        {"nnUNetPlannerResEncL", {192, 192, 192}, 2},
                        {"nnUNetPlannerResEncXL", {256, 224, 224}, 2}};
  for (const auto& c : cases) {
    const auto p = plan(kIsoFp, kIsoDs, c.planner);
    const auto& f = p["configurations"]["3d_fullres"];
    EXPECT_EQ(ints(f["patch_size"]), c.patch) << c.planner;
    EXPECT_EQ(f["batch_size"], c.bs) << c.planner;
    EXPECT_EQ(f["architecture"]["arch_kwargs"]["n_stages"], 6) << c.planner;
  }
  const auto p = plan(kIsoFp, kIsoDs, "ExperimentPlanner");
  EXPECT_EQ(ints(p["configurations"]["2d"]["patch_size"]), (std::vector<int>{448, 448}));
  EXPECT_EQ(p["configurations"]["2d"]["batch_size"], 16);
  EXPECT_EQ(p["configurations"]["3d_fullres"]["normalization_schemes"][0], "CTNormalization");
}

TEST(PlanningPlanner, LargeImagesGetALowresCascade) {
  const auto p = plan(kIsoFp, kIsoDs, "ExperimentPlanner");
  const auto& c = p["configurations"];
  ASSERT_TRUE(c.contains("3d_lowres"));
  EXPECT_EQ(c["3d_lowres"]["next_stage"], "3d_cascade_fullres");
  EXPECT_EQ(c["3d_lowres"]["batch_dice"], false);
  EXPECT_EQ(c["3d_lowres"]["data_identifier"], "nnUNetPlans_3d_lowres");
  EXPECT_EQ(c["3d_fullres"]["batch_dice"], true);
  EXPECT_EQ(c["3d_cascade_fullres"], (ordered_json{{"inherits_from", "3d_fullres"}, {"previous_stage", "3d_lowres"}}));
  // Isotropic: every axis grows by the same 1.03 steps; the lowres patch covers >= 25% of its median.
  const auto sp = c["3d_lowres"]["spacing"].get<std::vector<double>>();
  EXPECT_GT(sp[0], 1.0);
  EXPECT_EQ(sp[0], sp[1]);
  EXPECT_EQ(sp[1], sp[2]);
  const auto med = c["3d_lowres"]["median_image_size_in_voxels"];
  EXPECT_TRUE(med[0].is_number_integer());  // nnU-Net writes the rounded lowres median as ints
  const auto patch = ints(c["3d_lowres"]["patch_size"]);
  const double pv = double(patch[0]) * patch[1] * patch[2];
  const double mv = med[0].get<double>() * med[1].get<double>() * med[2].get<double>();
  EXPECT_GE(pv / mv, 0.24);
  EXPECT_LT(mv * 2, 400.0 * 400 * 400);
}

TEST(PlanningPlanner, CtAnisotropicPatchesPerPlanner) {
  struct Case {
    const char* planner;
    std::vector<int> patch;
  };
  const Case cases[] = {{"ExperimentPlanner", {64, 192, 160}},
                        {"nnUNetPlannerResEncM", {64, 160, 160}},
                        {"nnUNetPlannerResEncL", {96, 256, 224}},
                        {"nnUNetPlannerResEncXL", {112, 320, 256}}};
  for (const auto& c : cases) {
    const auto p = plan(kCtFp, kCtDs, c.planner);
    EXPECT_EQ(ints(p["configurations"]["3d_fullres"]["patch_size"]), c.patch) << c.planner;
  }
  const auto def = plan(kCtFp, kCtDs, "ExperimentPlanner");
  EXPECT_EQ(ints(def["configurations"]["3d_fullres"]["architecture"]["arch_kwargs"]["strides"][1]),
            (std::vector<int>{1, 2, 2}));
  const auto xl = plan(kCtFp, kCtDs, "nnUNetPlannerResEncXL");
  const auto& k = xl["configurations"]["3d_fullres"]["architecture"]["arch_kwargs"];
  EXPECT_EQ(k["n_stages"], 7);
  EXPECT_EQ(ints(k["strides"][6]), (std::vector<int>{1, 2, 2}));
}

// Hand-derived anisotropic case with a transpose (derivation in the comments).
// 11 cases, spacing (0.75, 0.75, z) with z = 3,4,5x7,6,6 and shape 100x100x20.
//  - median spacing z = 5 > 3*0.75 and 20*3 < 100 -> anisotropic; z target = 10th percentile = 4
//    (virtual index 10*0.1 = 1 -> sorted[1] = 4).
//  - transpose_forward = [2,0,1] (z first), backward = [1,2,0].
//  - resampled z sizes round(z/4*20) = 15,20,25x7,30,30 -> median 25; median_t = 25x100x100.
//  - 3d: initial patch clipped to 25x100x100; pools (see topology test) 2,4,4 -> patch 28x112x112,
//    5 stages. Feature maps 102,779,264 <= 560M: bs round(560e6/102779264*2) = 11, but the 5% cap is
//    round(25*100*100*11*0.05/351232) = 0 -> min batch 2.
//  - 28*112*112 / (25*100*100) > 0.25 -> no lowres; 3d batch_dice false.
//  - 2d: 100x100 at 0.75 -> 4 pools -> 112x112, 5 stages; estimate 3,838,464;
//    bs = round(85e6/3838464*12) = 266, cap round(2.75M*0.05/12544) = 11.
TEST(PlanningPlanner, HandDerivedAnisotropicWithTranspose) {
  json fp = uniform_fingerprint({0, 0, 0}, {100, 100, 20}, 11, 0.6);
  const double z[] = {3, 4, 5, 5, 5, 5, 5, 5, 5, 6, 6};
  for (int i = 0; i < 11; ++i) fp["spacings"][i] = {0.75, 0.75, z[i]};
  const json ds = dataset_json({"T2"}, 2, 11);
  const auto p = plan(fp, ds, "ExperimentPlanner", "Dataset123_Aniso");
  EXPECT_EQ(p["dataset_name"], "Dataset123_Aniso");
  EXPECT_EQ(ints(p["transpose_forward"]), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(ints(p["transpose_backward"]), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(p["original_median_spacing_after_transp"].get<std::vector<double>>(), (std::vector<double>{5, 0.75, 0.75}));
  EXPECT_EQ(ints(p["original_median_shape_after_transp"]), (std::vector<int>{20, 100, 100}));
  const auto& f = p["configurations"]["3d_fullres"];
  EXPECT_EQ(f["spacing"].get<std::vector<double>>(), (std::vector<double>{4, 0.75, 0.75}));
  EXPECT_EQ(f["median_image_size_in_voxels"].get<std::vector<double>>(), (std::vector<double>{25, 100, 100}));
  EXPECT_EQ(ints(f["patch_size"]), (std::vector<int>{28, 112, 112}));
  EXPECT_EQ(f["batch_size"], 2);
  EXPECT_EQ(f["batch_dice"], false);
  EXPECT_EQ(f["use_mask_for_norm"][0], true);  // ZScore and relative size 0.6 < 0.75
  const auto& k = f["architecture"]["arch_kwargs"];
  EXPECT_EQ(k["n_stages"], 5);
  EXPECT_EQ(k["features_per_stage"].get<std::vector<int>>(), (std::vector<int>{32, 64, 128, 256, 320}));
  EXPECT_EQ(ints(k["kernel_sizes"][0]), (std::vector<int>{1, 3, 3}));
  EXPECT_EQ(ints(k["strides"][3]), (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(k["n_conv_per_stage"].get<std::vector<int>>(), (std::vector<int>{2, 2, 2, 2, 2}));
  EXPECT_EQ(k["n_conv_per_stage_decoder"].get<std::vector<int>>(), (std::vector<int>{2, 2, 2, 2}));
  EXPECT_FALSE(p["configurations"].contains("3d_lowres"));
  const auto& d2 = p["configurations"]["2d"];
  EXPECT_EQ(ints(d2["patch_size"]), (std::vector<int>{112, 112}));
  EXPECT_EQ(d2["batch_size"], 11);
  EXPECT_EQ(d2["architecture"]["arch_kwargs"]["features_per_stage"].get<std::vector<int>>(),
            (std::vector<int>{32, 64, 128, 256, 512}));
}

// Patch sizes nnU-Net v2 itself printed or wrote, posted in MIC-DKFZ/nnUNet issues. Each is
// reproduced with a fingerprint whose target spacing and median shape are the ones reported.
TEST(PlanningPlanner, PatchSizesFromPublishedNnunetRuns) {
  struct Case {
    const char* source;
    std::array<double, 3> spacing, shape;
    std::vector<int> patch;
    const char* config;
    int channels;
  };
  const Case cases[] = {
      // #1768: "Attempting to find 3d_lowres config" log, four successive lowres steps.
      {"#1768 step 1", {1.545, 0.80669916, 0.80669916}, {139, 497, 497}, {56, 224, 192}, "3d_fullres", 1},
      {"#1768 step 2", {1.59135, 0.83090013, 0.83090013}, {135, 483, 483}, {56, 224, 192}, "3d_fullres", 1},
      {"#1768 step 3", {1.6390905, 0.85582714, 0.85582714}, {131, 469, 469}, {56, 224, 192}, "3d_fullres", 1},
      {"#1768 step 4", {1.68826322, 0.88150195, 0.88150195}, {127, 455, 455}, {56, 224, 192}, "3d_fullres", 1},
      // #2764: a 3d_lowres configuration (isotropic spacing, anisotropic median).
      {"#2764",
       {5.391651440886649, 5.391651440886649, 5.391651440886649},
       {62, 371, 371},
       {40, 256, 224},
       "3d_fullres",
       1},
      // #2227: a 3d_lowres configuration.
      {"#2227",
       {2.3565655060093813, 1.841066801569828, 1.841066801569828},
       {177, 217, 217},
       {128, 128, 128},
       "3d_fullres",
       1},
      // #1838: a 3d_fullres configuration (vessel CT).
      {"#1838", {1.0, 0.7871090173721313, 0.7871090173721313}, {388, 512, 512}, {112, 160, 128}, "3d_fullres", 1},
      // #2251: a 2D RGB dataset, 2848x4288 images.
      {"#2251", {999, 1, 1}, {1, 2848, 4288}, {1024, 1536}, "2d", 3},
  };
  for (const auto& c : cases) {
    const json fp = uniform_fingerprint(c.spacing, c.shape, 60, 1.0, c.channels);
    const std::vector<std::string> names(static_cast<std::size_t>(c.channels), "CT");
    const auto p = plan(fp, dataset_json(names, 3, 60), "ExperimentPlanner");
    EXPECT_EQ(ints(p["configurations"][c.config]["patch_size"]), c.patch) << c.source;
  }
}

TEST(PlanningPlanner, TargetSpacingOverwriteAndPlansName) {
  PlannerOptions o;
  o.plans_name = "nnUNetPlans_custom";
  o.overwrite_target_spacing = {2.0, 2.0, 2.0};
  const auto p = plan_experiment(fingerprint_from_json(kHippoFp, "fp"), dataset_json_from_json(kHippoDs, "ds"), o);
  EXPECT_EQ(p["plans_name"], "nnUNetPlans_custom");
  EXPECT_EQ(p["configurations"]["3d_fullres"]["data_identifier"], "nnUNetPlans_custom_3d_fullres");
  // 36x50x35 at 1mm -> round(0.5*shape) = 18x25x18 at 2mm.
  EXPECT_EQ(p["configurations"]["3d_fullres"]["median_image_size_in_voxels"].get<std::vector<double>>(),
            (std::vector<double>{18, 25, 18}));
}

TEST(PlanningPlanner, BadOverwriteSpacingIsAnError) {
  PlannerOptions o;
  o.overwrite_target_spacing = {1.0, 0.0, 1.0};
  EXPECT_THROW(plan_experiment(fingerprint_from_json(kHippoFp, "fp"), dataset_json_from_json(kHippoDs, "ds"), o),
               Error);
  o.overwrite_target_spacing = {1.0, 1.0};
  EXPECT_THROW(plan_experiment(fingerprint_from_json(kHippoFp, "fp"), dataset_json_from_json(kHippoDs, "ds"), o),
               Error);
}

TEST(PlanningPlanner, TwoDimensionalDatasetHasOnly2d) {
  // nnU-Net's 2D convention: shape 1 x H x W with a large dummy spacing on axis 0.
  const json fp = uniform_fingerprint({999, 0.5, 0.5}, {1, 512, 512}, 100, 1.0, 3);
  const auto p = plan(fp, dataset_json({"R", "G", "B"}, 2, 100, ".png"), "ExperimentPlanner");
  EXPECT_FALSE(p["configurations"].contains("3d_fullres"));
  EXPECT_EQ(ints(p["transpose_forward"]), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p["image_reader_writer"], "NaturalImage2DIO");
  // 512^2 fits the 2D initial 2048^2 clip; 512 pools 7 times (512 -> 4) -> 8 stages, max 512 features.
  const auto& k = p["configurations"]["2d"]["architecture"]["arch_kwargs"];
  EXPECT_EQ(ints(p["configurations"]["2d"]["patch_size"]), (std::vector<int>{512, 512}));
  EXPECT_EQ(k["n_stages"], 8);
  EXPECT_EQ(k["features_per_stage"][7], 512);
  EXPECT_EQ(p["configurations"]["2d"]["normalization_schemes"].size(), 3u);
}

TEST(PlanningPlanner, NormalizationByChannelName) {
  EXPECT_EQ(normalization_scheme_for("CT"), "CTNormalization");
  EXPECT_EQ(normalization_scheme_for("ct"), "CTNormalization");
  EXPECT_EQ(normalization_scheme_for("noNorm"), "NoNormalization");
  EXPECT_EQ(normalization_scheme_for("rescale_to_0_1"), "RescaleTo01Normalization");
  EXPECT_EQ(normalization_scheme_for("RGB_to_0_1"), "RGBTo01Normalization");
  EXPECT_EQ(normalization_scheme_for("T1"), "ZScoreNormalization");
}

TEST(PlanningPlanner, UnknownPlannerNamesTheKnownOnes) {
  try {
    plan(kHippoFp, kHippoDs, "nnUNetPlannerResEncXXL");
    FAIL();
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("nnUNetPlannerResEncXL"), std::string::npos); }
}

TEST(PlanningPlanner, BadFingerprintNamesTheFile) {
  json fp = kHippoFp;
  fp["spacings"][3] = {1.0, 1.0};
  try {
    fingerprint_from_json(fp, "/x/dataset_fingerprint.json");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("/x/dataset_fingerprint.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("spacings"), std::string::npos);
  }
}

TEST(PlanningPlanner, TheReorientingNiftiReaderIsPlannedForNiftiOnly) {
  const json fp = uniform_fingerprint({1.0, 1.0, 1.0}, {64, 64, 64}, 10, 1.0, 1);
  json ds = dataset_json({"CT"}, 2, 10, ".nii.gz");
  ds["overwrite_image_reader_writer"] = "NibabelIOWithReorient";
  const auto p =
      plan_experiment(fingerprint_from_json(fp, "fp"), dataset_json_from_json(ds, "dataset.json"), PlannerOptions{});
  EXPECT_EQ(p["image_reader_writer"], "NibabelIOWithReorient");
  ds["file_ending"] = ".nrrd";
  try {
    plan_experiment(fingerprint_from_json(fp, "fp"), dataset_json_from_json(ds, "dataset.json"), PlannerOptions{});
    ADD_FAILURE() << "planned";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), "dataset.json");
    EXPECT_NE(std::string(e.what()).find("reads .nii and .nii.gz only"), std::string::npos) << e.what();
  }
}

// nnU-Net 2.8.1's *_torchres planners (experiment_planners/resampling/resample_with_torch.py): the same
// patches as their base planners, resample_torch_fornnunet with their kwargs written in their key order, and
// their own data identifiers (generate_data_identifier: plans name + configuration). Large CT images, so
// the lowres configuration gets the kwargs too.
TEST(PlanningPlanner, TorchResamplingPlannersWriteNnunetsKwargs) {
  struct Row {
    const char *planner, *base, *plans;
    ordered_json kwargs;  // is_seg false
  };
  const ordered_json no_sepz =
      ordered_json::parse(R"({"is_seg": false, "force_separate_z": false, "memefficient_seg_resampling": false})");
  const ordered_json sepz = ordered_json::parse(
      R"({"is_seg": false, "force_separate_z": null, "memefficient_seg_resampling": false,
          "separate_z_anisotropy_threshold": 3})");
  const Row rows[] = {
      {"nnUNetPlanner_torchres", "ExperimentPlanner", "nnUNetPlans_torchres", no_sepz},
      {"nnUNetPlannerResEncL_torchres", "nnUNetPlannerResEncL", "nnUNetResEncUNetLPlans_torchres", no_sepz},
      {"nnUNetPlannerResEncL_torchres_sepz", "nnUNetPlannerResEncL", "nnUNetResEncUNetLPlans_torchres_sepz", sepz}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.planner);
    const auto p = plan(kIsoFp, kIsoDs, r.planner);
    const auto base = plan(kIsoFp, kIsoDs, r.base);
    EXPECT_EQ(p["plans_name"], r.plans);
    EXPECT_EQ(p["experiment_planner_used"], r.planner);
    ASSERT_TRUE(p["configurations"].contains("3d_lowres"));
    for (const char* c : {"2d", "3d_lowres", "3d_fullres"}) {
      SCOPED_TRACE(c);
      const auto& cfg = p["configurations"][c];
      EXPECT_EQ(cfg["data_identifier"], std::string(r.plans) + "_" + c);
      EXPECT_EQ(cfg["patch_size"], base["configurations"][c]["patch_size"]);
      EXPECT_EQ(cfg["batch_size"], base["configurations"][c]["batch_size"]);
      for (const char* k : {"resampling_fn_data", "resampling_fn_seg", "resampling_fn_probabilities"})
        EXPECT_EQ(cfg[k], "resample_torch_fornnunet");
      ordered_json seg = r.kwargs;
      seg["is_seg"] = true;
      EXPECT_EQ(cfg["resampling_fn_data_kwargs"].dump(), r.kwargs.dump());
      EXPECT_EQ(cfg["resampling_fn_seg_kwargs"].dump(), seg.dump());
      EXPECT_EQ(cfg["resampling_fn_probabilities_kwargs"].dump(), r.kwargs.dump());
    }
  }
}
