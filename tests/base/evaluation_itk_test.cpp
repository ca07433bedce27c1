// Metrics against hand-counted overlaps, nnU-Net's NaN rule, HD95 on shapes with known distances.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/json_io.h"
#include "evaluation/evaluate_folder.h"
#include "evaluation/metrics.h"
#include "evaluation/surface_distance.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::evaluation;

TEST(Metrics, CountsDiceIouByHand) {
  // ref:  1 1 1 0 2 0 ; pred: 1 1 0 1 0 0
  const int32_t ref[6] = {1, 1, 1, 0, 2, 0}, pred[6] = {1, 1, 0, 1, 0, 0};
  const auto c = count_labels(ref, pred, 6, {{1}, {2}, {3}});
  EXPECT_EQ(c[0].tp, 2);
  EXPECT_EQ(c[0].fp, 1);
  EXPECT_EQ(c[0].fn, 1);
  EXPECT_EQ(c[0].tn, 2);
  EXPECT_DOUBLE_EQ(c[0].dice(), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(c[0].iou(), 2.0 / 4.0);
  EXPECT_DOUBLE_EQ(c[1].dice(), 0.0);    // present in ref only
  EXPECT_TRUE(std::isnan(c[2].dice()));  // absent from both
  // A region {1,2}: ref has 4 voxels, pred 3, overlap 2.
  const auto r = count_labels(ref, pred, 6, {{1, 2}});
  EXPECT_EQ(r[0].tp, 2);
  EXPECT_EQ(r[0].fn, 2);
  EXPECT_EQ(r[0].fp, 1);
}

TEST(Metrics, IgnoreLabelCountsNowhere) {
  const int32_t ref[4] = {1, 5, 5, 0}, pred[4] = {1, 1, 0, 1};
  const auto c = count_labels(ref, pred, 4, {{1}}, 5);
  EXPECT_EQ(c[0].tp, 1);
  EXPECT_EQ(c[0].fp, 1);
  EXPECT_EQ(c[0].tn, 0);
}

TEST(Metrics, OverlappingRegionsEmptyReferenceAndIgnoredVoxelByHand) {
  // index:   0  1  2  3  4  5  6      (voxel 4 holds the ignore label 9 and counts nowhere)
  const int32_t ref[7] = {1, 2, 2, 0, 9, 0, 0}, pred[7] = {2, 2, 0, 1, 1, 0, 3};
  const auto c = count_labels(ref, pred, 7, {{1, 2}, {2}, {3}, {4}}, 9);
  // {1,2}: ref {0,1,2}, pred {0,1,3}: tp 2, fp 1 (3), fn 1 (2), tn 2 (5, 6).
  EXPECT_EQ(c[0].tp, 2);
  EXPECT_EQ(c[0].fp, 1);
  EXPECT_EQ(c[0].fn, 1);
  EXPECT_EQ(c[0].tn, 2);
  EXPECT_DOUBLE_EQ(c[0].dice(), 4.0 / 6.0);
  // {2} overlaps {1,2}: ref {1,2}, pred {0,1}: tp 1, fp 1, fn 1, tn 3.
  EXPECT_EQ(c[1].tp, 1);
  EXPECT_EQ(c[1].fp, 1);
  EXPECT_EQ(c[1].fn, 1);
  EXPECT_EQ(c[1].tn, 3);
  EXPECT_DOUBLE_EQ(c[1].dice(), 0.5);
  // {3}: empty reference, one predicted voxel: Dice 0 (nnU-Net), not NaN.
  EXPECT_EQ(c[2].fp, 1);
  EXPECT_EQ(c[2].tp + c[2].fn, 0);
  EXPECT_DOUBLE_EQ(c[2].dice(), 0.0);
  // {4}: empty in both: NaN, left out of the means.
  EXPECT_TRUE(std::isnan(c[3].dice()));
  EXPECT_EQ(c[3].tn, 6);
}

TEST(Metrics, SummaryMeansSkipNaNCases) {
  CaseResult a{"r1", "p1", {{2, 0, 0, 10, std::nullopt}, {0, 0, 0, 12, std::nullopt}}};  // label 2 absent: NaN
  CaseResult b{"r2", "p2", {{1, 1, 0, 10, std::nullopt}, {1, 0, 1, 10, std::nullopt}}};
  const json s = summary_json({a, b}, {"1", "2"});
  EXPECT_DOUBLE_EQ(s["mean"]["1"]["Dice"].get<double>(), (1.0 + 2.0 / 3.0) / 2);
  EXPECT_DOUBLE_EQ(s["mean"]["2"]["Dice"].get<double>(), 2.0 / 3.0);  // only case b counts
  EXPECT_TRUE(s["metric_per_case"][0]["metrics"]["2"]["Dice"].is_null());
  EXPECT_DOUBLE_EQ(s["foreground_mean"]["Dice"].get<double>(), ((1.0 + 2.0 / 3.0) / 2 + 2.0 / 3.0) / 2);
  EXPECT_DOUBLE_EQ(s["mean"]["1"]["TP"].get<double>(), 1.5);
}

TEST(SurfaceDistance, ShiftedCubeHasKnownHd95) {
  // Two 6^3 cubes, one shifted by 3 voxels along x with spacing 2 mm: every surface voxel of one
  // is at most 3 voxels (6 mm) from the other's surface along x; the 95th percentile is 6 mm.
  const std::array<int64_t, 3> s{12, 12, 16};
  std::vector<uint8_t> a(12 * 12 * 16, 0), b(a.size(), 0);
  for (int z = 3; z < 9; ++z)
    for (int y = 3; y < 9; ++y)
      for (int x = 3; x < 9; ++x) {
        a[(z * 12 + y) * 16 + x] = 1;
        b[(z * 12 + y) * 16 + x + 3] = 1;
      }
  EXPECT_NEAR(hd95(a, a, s, {1, 1, 2}), 0.0, 1e-6);
  EXPECT_NEAR(hd95(a, b, s, {1, 1, 2}), 6.0, 1e-4);
}

TEST(EvaluateCli, WritesSummaryAndFailsOnMissingPrediction) {
  test::TempDir d("eval");
  std::filesystem::create_directories(d / "gt");
  std::filesystem::create_directories(d / "pred");
  const std::vector<double> ref{1, 1, 1, 0, 2, 0, 0, 0}, pred{1, 1, 0, 1, 2, 0, 0, 0};
  io::write_image(d / "gt/c1.nii.gz", Volume::from_values(PixelType::UInt8, {2, 2, 2}, Geometry{}, ref));
  io::write_image(d / "pred/c1.nii.gz", Volume::from_values(PixelType::UInt8, {2, 2, 2}, Geometry{}, pred));
  write_json(d / "dataset.json", json{{"labels", {{"background", 0}, {"a", 1}, {"b", 2}}},
                                      {"file_ending", ".nii.gz"},
                                      {"channel_names", {{"0", "CT"}}},
                                      {"numTraining", 1}});
  auto r = test::run_cli("medseg_evaluate", d / "gt " + d / "pred -djfile " + d / "dataset.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json s = read_json(d / "pred/summary.json");
  EXPECT_DOUBLE_EQ(s["mean"]["1"]["Dice"].get<double>(), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(s["mean"]["2"]["Dice"].get<double>(), 1.0);
  io::write_image(d / "gt/c2.nii.gz", Volume::from_values(PixelType::UInt8, {2, 2, 2}, Geometry{}, ref));
  r = test::run_cli("medseg_evaluate", d / "gt " + d / "pred -djfile " + d / "dataset.json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("c2.nii.gz"), std::string::npos) << r.output;
}

// nnUNetv2_evaluate_simple's habits: labels on the command line, no dataset.json, -il, -o.
TEST(EvaluateSimpleCli, ScoresTheGivenLabelsWithAndWithoutTheIgnoreLabel) {
  test::TempDir d("eval_simple");
  std::filesystem::create_directories(d / "gt");
  std::filesystem::create_directories(d / "pred");
  // label 1: tp 2 (voxels 0, 1), fn 1 (voxel 2), fp 2 (voxel 3, and voxel 4 where the reference says 2)
  const std::vector<double> ref{1, 1, 1, 0, 2, 0, 0, 0}, pred{1, 1, 0, 1, 1, 0, 0, 0};
  io::write_image(d / "gt/c1.nii.gz", Volume::from_values(PixelType::UInt8, {2, 2, 2}, Geometry{}, ref));
  io::write_image(d / "pred/c1.nii.gz", Volume::from_values(PixelType::UInt8, {2, 2, 2}, Geometry{}, pred));
  auto r = test::run_cli("medseg_evaluate_simple", d / "gt " + d / "pred -l 1 2 -np 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json s = read_json(d / "pred/summary.json");
  EXPECT_DOUBLE_EQ(s["mean"]["1"]["Dice"].get<double>(), 4.0 / 7.0);
  EXPECT_DOUBLE_EQ(s["mean"]["2"]["Dice"].get<double>(), 0.0);  // in the reference only
  EXPECT_EQ(s["metric_per_case"].size(), 1u);
  // -il 2: voxel 4 counts nowhere, so label 1 has one false positive left.
  r = test::run_cli("medseg_evaluate_simple", d / "gt " + d / "pred -l 1 -il 2 -o " + d / "s.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  s = read_json(d / "s.json");
  EXPECT_DOUBLE_EQ(s["mean"]["1"]["Dice"].get<double>(), 4.0 / 6.0);
  EXPECT_FALSE(s["mean"].contains("2"));
}

TEST(EvaluateSimpleCli, BadInputIsOneLineNamingTheProblem) {
  test::TempDir d("eval_simple_bad");
  std::filesystem::create_directories(d / "gt");
  std::filesystem::create_directories(d / "pred");
  auto r = test::run_cli("medseg_evaluate_simple", d / "gt " + d / "pred -l 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("holds no reference segmentation"), std::string::npos) << r.output;
  const std::vector<double> ref{1, 0, 0, 0, 0, 0, 0, 0};
  io::write_image(d / "gt/c1.nii.gz", Volume::from_values(PixelType::UInt8, {2, 2, 2}, Geometry{}, ref));
  r = test::run_cli("medseg_evaluate_simple", d / "gt " + d / "pred -l 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("-l: label 0"), std::string::npos) << r.output;
  r = test::run_cli("medseg_evaluate_simple", d / "gt " + d / "pred -l 1");  // no prediction for c1
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("c1.nii.gz"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d / "pred/summary.json"));
}
