// Logits -> segmentation with hand-built case properties: uncrop and back-transpose land every
// voxel where worked out by hand, order-1 resampling of logits follows skimage's pixel-area grid,
// regions follow regions_class_order, probabilities get background 1 outside the crop box.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/error.h"
#include "inference/export.h"
#include "preprocessing/skimage_resize.h"

using namespace medseg;
using namespace medseg::inference;
using preprocessing::CaseProperties;

namespace {

// Original (z, y, x) = (4, 5, 6); transpose_forward (2, 0, 1) gives (x, z, y) = (6, 4, 5); crop box
// lo (1, 1, 1) hi (5, 3, 4) in transposed axes -> cropped (4, 2, 3); no resampling.
CaseProperties hand_props() {
  CaseProperties p;
  p.id = "hand";
  p.original_shape = {4, 5, 6};
  p.original_geometry.spacing = {0.7, 0.8, 2.5};
  p.original_geometry.origin = {10, -20, 30};
  p.transpose_forward = {2, 0, 1};
  p.shape_before_cropping = {6, 4, 5};
  p.bbox_used_for_cropping.lo = {1, 1, 1};
  p.bbox_used_for_cropping.hi = {5, 3, 4};
  p.shape_after_cropping_and_before_resampling = {4, 2, 3};
  p.spacing_before_resampling = {0.7, 2.5, 0.8};
  p.spacing_after_resampling = {0.7, 2.5, 0.8};
  p.shape_after_resampling = {4, 2, 3};
  return p;
}

LabelMapping three_labels() { return {false, {0, 1, 2}, PixelType::UInt8}; }

}  // namespace

TEST(InferenceExport, UncropAndBackTransposeByHand) {
  const CaseProperties p = hand_props();
  auto logits = torch::zeros({3, 4, 2, 3});
  logits[1].fill_(1.0);
  logits[2][3][1][2] = 5.0;  // cropped (3, 1, 2) -> transposed (4, 2, 3) = (x, z, y) -> original (z 2, y 3, x 4)
  std::vector<float> probs;
  const Volume seg = logits_to_segmentation(logits, p, three_labels(), ExportOptions{}, &probs);
  ASSERT_EQ(seg.shape(), (Shape3{4, 5, 6}));
  EXPECT_EQ(seg.pixel_type(), PixelType::UInt8);
  EXPECT_EQ(seg.geometry(), p.original_geometry);
  int ones = 0, twos = 0;
  for (int64_t z = 0; z < 4; ++z)
    for (int64_t y = 0; y < 5; ++y)
      for (int64_t x = 0; x < 6; ++x) {
        const double v = seg.at(z, y, x);
        // inside the box: x in [1, 5), z in [1, 3), y in [1, 4)
        const bool inside = x >= 1 && x < 5 && z >= 1 && z < 3 && y >= 1 && y < 4;
        if (z == 2 && y == 3 && x == 4) {
          EXPECT_EQ(v, 2);
          ++twos;
        } else {
          EXPECT_EQ(v, inside ? 1 : 0) << z << " " << y << " " << x;
          ones += v == 1;
        }
      }
  EXPECT_EQ(ones, 23);
  EXPECT_EQ(twos, 1);
  // softmax(0, 1, 0) inside; (1, 0, 0) outside; layout (class, z, y, x) of the original.
  const int64_t N = 4 * 5 * 6;
  ASSERT_EQ(static_cast<int64_t>(probs.size()), 3 * N);
  const double e = std::exp(1.0), s = 2.0 + e;
  const int64_t inside_voxel = (1 * 5 + 1) * 6 + 1, outside_voxel = 0;
  EXPECT_NEAR(probs[0 * N + inside_voxel], 1.0 / s, 1e-6);
  EXPECT_NEAR(probs[1 * N + inside_voxel], e / s, 1e-6);
  EXPECT_NEAR(probs[0 * N + outside_voxel], 1.0, 1e-7);
  EXPECT_NEAR(probs[1 * N + outside_voxel], 0.0, 1e-7);
}

TEST(InferenceExport, LogitsAreResampledLinearlyOnThePixelAreaGrid) {
  if (!preprocessing::resampling_available()) GTEST_SKIP() << "built with -DMEDSEG_WITH_ITK=OFF: no resampling kernels";
  // Identity transpose, no crop; the last axis was upsampled 3 -> 6 by preprocessing (spacing 1 ->
  // 0.5). Class 1's logit along x is (0..5) - 2.6; going back to 3 voxels samples x at
  // (o + 0.5) * 2 - 0.5 = 0.5, 2.5, 4.5 -> -2.1, -0.1, 1.9: only the last voxel beats class 0's 0.
  CaseProperties p;
  p.original_shape = {2, 2, 3};
  p.shape_before_cropping = {2, 2, 3};
  p.bbox_used_for_cropping.hi = {2, 2, 3};
  p.shape_after_cropping_and_before_resampling = {2, 2, 3};
  p.spacing_before_resampling = {1, 1, 1};
  p.spacing_after_resampling = {1, 1, 0.5};
  p.shape_after_resampling = {2, 2, 6};
  auto logits = torch::zeros({2, 2, 2, 6});
  logits[1] = (torch::arange(6, torch::kFloat) - 2.6).view({1, 1, 6}).expand({2, 2, 6});
  std::vector<float> probs;
  LabelMapping two{false, {0, 1}, PixelType::UInt8};
  const Volume seg = logits_to_segmentation(logits, p, two, ExportOptions{}, &probs);
  for (int64_t z = 0; z < 2; ++z)
    for (int64_t y = 0; y < 2; ++y) {
      EXPECT_EQ(seg.at(z, y, 0), 0);
      EXPECT_EQ(seg.at(z, y, 1), 0);
      EXPECT_EQ(seg.at(z, y, 2), 1);
    }
  const int64_t N = 12;
  EXPECT_NEAR(probs[N + 1], 1.0 / (1.0 + std::exp(0.1)), 1e-5);   // sigmoid(-0.1)
  EXPECT_NEAR(probs[N + 2], 1.0 / (1.0 + std::exp(-1.9)), 1e-5);  // sigmoid(1.9)
}

TEST(InferenceExport, RegionsPaintInRegionsClassOrder) {
  const CaseProperties p = hand_props();
  auto logits = torch::full({2, 4, 2, 3}, -1.0);
  logits[0].fill_(1.0);      // region painted 1: on everywhere in the box
  logits[1][0][0][0] = 1.0;  // region painted 2: one voxel; transposed (1, 1, 1) -> original (1, 1, 1)
  const LabelMapping regions{true, {1, 2}, PixelType::UInt8};
  const Volume seg = logits_to_segmentation(logits, p, regions, ExportOptions{});
  EXPECT_EQ(seg.at(1, 1, 1), 2);
  EXPECT_EQ(seg.at(1, 1, 2), 1);
  EXPECT_EQ(seg.at(0, 0, 0), 0);
  EXPECT_EQ(seg.at(2, 3, 4), 1);
}

TEST(InferenceExport, LabelMappingFromDatasetJson) {
  io::DatasetInfo ds =
      io::dataset_info_from_json(ordered_json{{"channel_names", {{"0", "CT"}}},
                                              {"labels", {{"background", 0}, {"a", 1}, {"b", 2}, {"ignore", 3}}},
                                              {"numTraining", 1},
                                              {"file_ending", ".nii.gz"}},
                                 "dataset.json");
  const LabelMapping m = label_mapping(ds, "dataset.json");
  EXPECT_FALSE(m.regions);
  EXPECT_EQ(m.values, (std::vector<int>{0, 1, 2}));  // "ignore" is not a network output
  io::DatasetInfo r =
      io::dataset_info_from_json(ordered_json{{"channel_names", {{"0", "T1"}}},
                                              {"labels", {{"background", 0}, {"whole", {1, 2}}, {"core", {2}}}},
                                              {"regions_class_order", {1, 2}},
                                              {"numTraining", 1},
                                              {"file_ending", ".nii.gz"}},
                                 "dataset.json");
  const LabelMapping rm = label_mapping(r, "dataset.json");
  EXPECT_TRUE(rm.regions);
  EXPECT_EQ(rm.values, (std::vector<int>{1, 2}));
  r.raw.erase("regions_class_order");
  EXPECT_THROW(label_mapping(r, "dataset.json"), Error);
}

// nnU-Net's region example (documentation/region_based_training.md), verbatim: output k is the k-th
// region as listed and is painted with regions_class_order[k], names out of alphabetical order.
TEST(InferenceExport, NnUNetRegionExampleMapsOutputsInTheFilesOrder) {
  const io::DatasetInfo ds = io::dataset_info_from_json(ordered_json::parse(R"({"channel_names": {"0": "FLAIR"},
      "labels": {"background": 0, "whole_tumor": [1, 2, 3], "tumor_core": [2, 3], "enhancing_tumor": 3},
      "regions_class_order": [1, 2, 3], "numTraining": 1, "file_ending": ".nii.gz"})"),
                                                        "dataset.json");
  const LabelMapping m = label_mapping(ds, "dataset.json");
  EXPECT_TRUE(m.regions);
  EXPECT_EQ(m.values, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(io::foreground_regions(ds.labels), (std::vector<std::vector<int>>{{1, 2, 3}, {2, 3}, {3}}));
}
