// Per-case analysis on in-memory cases (no image files): spacing order, shapes, relative size,
// foreground selection and the sample counts nnU-Net uses.
#include <gtest/gtest.h>

#include <algorithm>

#include "fingerprint/extractor.h"

using namespace medseg;
using namespace medseg::fingerprint;

namespace {

int64_t extract_idx(const Shape3& s, int64_t z, int64_t y, int64_t x) { return (z * s[1] + y) * s[2] + x; }

// Shape (4,5,6); body (value 1 / 10) in [1,3)x[1,4)x[1,5); labels at three body voxels with
// channel-0 values 2, 4, 6 (channel 1: 20, 40, 60), and one label in the empty region (cropped away).
io::LoadedCase make_case() {
  const Shape3 s{4, 5, 6};
  Geometry g;
  g.spacing = {0.5, 0.75, 2.0};  // x, y, z
  io::LoadedCase c;
  c.id = "case_a";
  c.channels = {Volume(PixelType::Float32, s, g), Volume(PixelType::Float32, s, g)};
  for (int64_t z = 1; z < 3; ++z)
    for (int64_t y = 1; y < 4; ++y)
      for (int64_t x = 1; x < 5; ++x) {
        c.channels[0].data<float>()[extract_idx(s, z, y, x)] = 1;
        c.channels[1].data<float>()[extract_idx(s, z, y, x)] = 10;
      }
  c.label = Volume(PixelType::Int16, s, g);
  const int64_t fg[3][3] = {{1, 1, 1}, {1, 1, 2}, {2, 3, 4}};
  for (int k = 0; k < 3; ++k) {
    const int64_t i = extract_idx(s, fg[k][0], fg[k][1], fg[k][2]);
    c.channels[0].data<float>()[i] = 2.0f * (k + 1);
    c.channels[1].data<float>()[i] = 20.0f * (k + 1);
    c.label.data<int16_t>()[i] = static_cast<int16_t>(k == 2 ? 2 : 1);
  }
  c.label.data<int16_t>()[extract_idx(s, 3, 0, 0)] = 1;  // outside the box: not foreground after cropping
  return c;
}

}  // namespace

TEST(FingerprintExtract, ShapesSpacingRelativeSize) {
  CaseAnalysis a = analyze_case(make_case(), 10, false, 1234);
  EXPECT_EQ(a.spacing, (std::array<double, 3>{2.0, 0.75, 0.5}));
  EXPECT_EQ(a.record.shape_before_crop, (Shape3{4, 5, 6}));
  EXPECT_EQ(a.shape_after_crop, (Shape3{2, 3, 4}));
  EXPECT_EQ(a.record.bbox.lo, (Shape3{1, 1, 1}));
  EXPECT_DOUBLE_EQ(a.record.relative_size_after_cropping, 24.0 / 120.0);
  EXPECT_EQ(a.record.num_foreground_voxels, 3);
}

TEST(FingerprintExtract, ExactModeUsesEveryForegroundVoxel) {
  CaseAnalysis a = analyze_case(make_case(), 10, true, 1234);
  ASSERT_EQ(a.samples.size(), 2u);
  EXPECT_EQ(a.samples[0], (std::vector<float>{2, 4, 6}));  // raster order
  EXPECT_EQ(a.samples[1], (std::vector<float>{20, 40, 60}));
  // per-case statistics over {2,4,6}: mean 4, std sqrt(8/3), p0.5 = 2 + 2*0.01, p99.5 = 4 + 2*0.99
  const IntensityStats& s = a.record.stats[0];
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  EXPECT_DOUBLE_EQ(s.median, 4.0);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(8.0 / 3.0));
  EXPECT_DOUBLE_EQ(s.percentile_00_5, 2.02);
  EXPECT_DOUBLE_EQ(s.percentile_99_5, 5.98);
}

TEST(FingerprintExtract, SamplesDrawnWithReplacementFromForegroundOnly) {
  CaseAnalysis a = analyze_case(make_case(), 3000, false, 1234);
  ASSERT_EQ(a.samples[0].size(), 3000u);  // more samples than the 3 foreground voxels
  for (float v : a.samples[0]) EXPECT_TRUE(v == 2 || v == 4 || v == 6) << v;
  for (int v : {2, 4, 6}) EXPECT_NEAR(std::count(a.samples[0].begin(), a.samples[0].end(), float(v)), 1000, 120);
  // The channels draw one after the other from one stream (like nnU-Net's shared RandomState), so
  // channel 1's draws are not channel 0's draws times ten.
  int same = 0;
  for (int i = 0; i < 3000; ++i) same += a.samples[1][i] == 10 * a.samples[0][i];
  EXPECT_LT(same, 1500);
  // Seeded: the same case gives the same samples.
  EXPECT_EQ(analyze_case(make_case(), 3000, false, 1234).samples[0], a.samples[0]);
}

TEST(FingerprintExtract, CaseWithoutForegroundGivesNoSamples) {
  io::LoadedCase c = make_case();
  c.label = Volume(PixelType::Int16, c.shape(), c.geometry());
  CaseAnalysis a = analyze_case(c, 100, false, 1234);
  EXPECT_EQ(a.record.num_foreground_voxels, 0);
  EXPECT_TRUE(a.samples[0].empty());
  EXPECT_TRUE(std::isnan(a.record.stats[0].mean));
}

TEST(FingerprintExtract, SamplesPerCaseFollowsNnUNet) {
  EXPECT_EQ(samples_per_case(kDefaultMaxSamplesTotal, 3), 33333333);  // int(10e7 // 3)
  EXPECT_EQ(samples_per_case(kDefaultMaxSamplesTotal, 7), 14285714);
  EXPECT_EQ(samples_per_case(kDefaultMaxSamplesTotal, 1), 100000000);
  EXPECT_EQ(samples_per_case(5, 10), 1);
}
