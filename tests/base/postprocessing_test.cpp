// Postprocessing by hand: connected components with full (26 / in-plane 8) connectivity, the
// largest-component step on hand-drawn segmentations, and postprocessing.json as nnU-Net writes it.
#include <gtest/gtest.h>

#include "core/error.h"
#include "postprocessing/components.h"
#include "postprocessing/postprocessing.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::postprocessing;

TEST(ConnectedComponents, DiagonalNeighboursJoinInRasterOrder) {
  // One slice, 4 x 5:      components (8-connectivity):
  //   1 0 0 0 1              A A . . B
  //   0 1 0 0 0              . A . . .
  //   0 0 0 1 1              . . . C C
  //   1 0 0 1 0              D . . C .
  const std::vector<uint8_t> m = {1, 0, 0, 0, 1,  //
                                  0, 1, 0, 0, 0,  //
                                  0, 0, 0, 1, 1,  //
                                  1, 0, 0, 1, 0};
  const Components c = connected_components(m, {1, 4, 5});
  EXPECT_EQ(c.sizes, (std::vector<int64_t>{0, 2, 1, 3, 1}));
  EXPECT_EQ(c.label, (std::vector<int32_t>{1, 0, 0, 0, 2,  //
                                           0, 1, 0, 0, 0,  //
                                           0, 0, 0, 3, 3,  //
                                           4, 0, 0, 3, 0}));
}

TEST(ConnectedComponents, CornerTouchingVoxelsAreOneComponentIn3D) {
  std::vector<uint8_t> m(8, 0);
  m[0] = 1;  // (0,0,0)
  m[7] = 1;  // (1,1,1): shares only a corner
  EXPECT_EQ(connected_components(m, {2, 2, 2}).sizes, (std::vector<int64_t>{0, 2}));
  m[7] = 0;
  m[3] = 1;  // (0,1,1): an edge in the first slice
  m[4] = 1;  // (1,0,0): a face below
  EXPECT_EQ(connected_components(m, {2, 2, 2}).sizes, (std::vector<int64_t>{0, 3}));
}

TEST(ConnectedComponents, LargestKeepsTheFirstOfEqualSizes) {
  EXPECT_EQ(largest_component({1, 1, 0, 1, 1}, {1, 1, 5}), (std::vector<uint8_t>{1, 1, 0, 0, 0}));
  EXPECT_EQ(largest_component({1, 0, 1, 1, 0}, {1, 1, 5}), (std::vector<uint8_t>{0, 0, 1, 1, 0}));
  EXPECT_EQ(largest_component({0, 0, 0}, {1, 1, 3}), (std::vector<uint8_t>{0, 0, 0}));
}

namespace {

Volume seg_of(const std::vector<double>& v, std::array<int64_t, 3> shape, PixelType t = PixelType::UInt8) {
  Geometry g;
  g.spacing = {0.7, 0.8, 2.5};
  g.origin = {3, -4, 5};
  return Volume::from_values(t, shape, g, v);
}

std::vector<double> values_of(const Volume& v) { return v.to_double(); }

}  // namespace

TEST(Postprocessing, KeepLargestForegroundAndPerLabelByHand) {
  // 3 x 6 slice:  1 1 0 0 2 0 / 1 0 0 0 0 0 / 0 0 0 1 0 2
  const std::vector<double> s = {1, 1, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2};
  const Volume seg = seg_of(s, {1, 3, 6});
  // All foreground at once: the three-voxel component of label 1 is the largest; every other
  // component (a lone 2, a lone 1, a lone 2) becomes background.
  const Volume all = apply_postprocessing(seg, {{{1, 2}}});
  EXPECT_EQ(values_of(all), (std::vector<double>{1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(all.pixel_type(), PixelType::UInt8);
  EXPECT_EQ(all.geometry().spacing, seg.geometry().spacing);
  EXPECT_EQ(all.geometry().origin, seg.geometry().origin);
  // Label 2 alone: two single voxels, the first in raster order stays; label 1 is untouched.
  const Volume two = apply_postprocessing(seg, {{{2}}});
  EXPECT_EQ(values_of(two), (std::vector<double>{1, 1, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}));
  // No steps: unchanged; int16 volumes (as read_label returns) work the same.
  EXPECT_EQ(values_of(apply_postprocessing(seg, {})), s);
  EXPECT_EQ(values_of(apply_postprocessing(seg_of(s, {1, 3, 6}, PixelType::Int16), {{{1, 2}}})), values_of(all));
  EXPECT_THROW(apply_postprocessing(seg_of(s, {1, 3, 6}, PixelType::Float32), {{{1}}}), Error);
}

TEST(PostprocessingJson, ReadsNnUNetsFileAndRoundTrips) {
  // What nnU-Net's determine_postprocessing writes (its postprocessing.json), abridged.
  const json nn = json::parse(R"({
    "input_folder": {"foreground_mean": {"Dice": 0.8}, "mean": {"1": {"Dice": 0.7}, "2": {"Dice": 0.9}}},
    "postprocessed": {"foreground_mean": {"Dice": 0.85}, "mean": {"1": {"Dice": 0.8}, "2": {"Dice": 0.9}}},
    "postprocessing_fns": ["remove_all_but_largest_component_from_segmentation",
                           "remove_all_but_largest_component_from_segmentation"],
    "postprocessing_kwargs": [{"labels_or_regions": [1, 2]}, {"labels_or_regions": 2}]})");
  const Postprocessing pp = postprocessing_from_json(nn, "pp.json");
  ASSERT_EQ(pp.steps.size(), 2u);
  EXPECT_EQ(pp.steps[0].values, (std::vector<int>{1, 2}));
  EXPECT_EQ(pp.steps[1].values, (std::vector<int>{2}));
  EXPECT_EQ(pp.file_ending, ".nii.gz");
  EXPECT_DOUBLE_EQ(pp.after["foreground_mean"]["Dice"].get<double>(), 0.85);
  const json mine = to_json(pp);
  EXPECT_EQ(mine["format"], "medseg.postprocessing");
  EXPECT_EQ(mine["postprocessing_kwargs"], nn["postprocessing_kwargs"]);
  EXPECT_EQ(postprocessing_from_json(mine, "x").steps[0].values, pp.steps[0].values);
  // A region of a region dataset, [[1, 2], 3] as a list of regions: the mask is their union.
  json regions = nn;
  regions["postprocessing_kwargs"] =
      json::parse(R"([{"labels_or_regions": [[1, 2], [3]]}, {"labels_or_regions": [2, 3]}])");
  EXPECT_EQ(postprocessing_from_json(regions, "r").steps[0].values, (std::vector<int>{1, 2, 3}));
}

TEST(PostprocessingJson, BadFilesAreOneLineNamingTheFile) {
  const json good = {{"postprocessing_fns", {"remove_all_but_largest_component_from_segmentation"}},
                     {"postprocessing_kwargs", {{{"labels_or_regions", 1}}}}};
  struct Bad {
    std::string what;
    json j;
    std::string says;
  };
  std::vector<Bad> bad;
  bad.push_back({"array", json::array(), "expected a JSON object"});
  json j = good;
  j.erase("postprocessing_kwargs");
  bad.push_back({"no kwargs", j, "postprocessing_kwargs"});
  j = good;
  j["postprocessing_fns"].push_back("remove_all_but_largest_component_from_segmentation");
  bad.push_back({"lengths", j, "2 postprocessing_fns but 1 postprocessing_kwargs"});
  j = good;
  j["postprocessing_fns"][0] = "fill_holes";
  bad.push_back({"unknown step", j, "unknown postprocessing step \"fill_holes\""});
  j = good;
  j["postprocessing_kwargs"][0]["labels_or_regions"] = 0;
  bad.push_back({"background", j, "holds 0"});
  j = good;
  j["postprocessing_kwargs"][0]["labels_or_regions"] = "1";
  bad.push_back({"string label", j, "labels_or_regions must be"});
  j = good;
  j["postprocessing_kwargs"][0]["labels_or_regions"] = json::array();
  bad.push_back({"empty", j, "has no labels"});
  j = good;
  j["postprocessing_kwargs"][0]["labels_or_regions"] = 4294967297LL;  // was cast to 32 bits: label 1
  bad.push_back(
      {"label beyond int", j, "postprocessing_kwargs[0].labels_or_regions is 4294967297 (expected an integer"});
  j = good;
  j["postprocessing_kwargs"][0]["labels_or_regions"] = json::parse("[1, [2, 3]]");
  j["postprocessing_kwargs"][0]["labels_or_regions"][1][1] = -4294967295LL;
  bad.push_back({"region value beyond int", j, "postprocessing_kwargs[0].labels_or_regions[1][1] is -4294967295"});
  j = good;
  j["postprocessing_kwargs"][0]["labels_or_regions"] = json::parse("[[[1]], 2]");
  bad.push_back({"deeper than a list of regions", j,
                 "postprocessing_kwargs[0].labels_or_regions[0][0] is [1]: a region holds labels, not lists"});
  j = good;
  j["file_ending"] = "/../x.nii.gz";
  bad.push_back({"file_ending with /", j, "file_ending '/../x.nii.gz' is not a valid name"});
  j = good;
  j["version"] = 2;
  bad.push_back({"newer", j, "newer than this medseg reads"});
  j = good;
  j["format"] = "medseg-probabilities";
  bad.push_back({"other format", j, "format is"});
  for (const auto& b : bad) {
    try {
      postprocessing_from_json(b.j, "/data/pp.json");
      ADD_FAILURE() << b.what << ": accepted";
    } catch (const FileError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("/data/pp.json"), std::string::npos) << b.what << ": " << m;
      EXPECT_NE(m.find(b.says), std::string::npos) << b.what << ": " << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << b.what << ": " << m;
    }
  }
  EXPECT_EQ(postprocessing_from_json(good, "g").steps.size(), 1u);
}
