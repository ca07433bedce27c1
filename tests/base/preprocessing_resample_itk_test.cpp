// Resampling against facts that do not depend on the implementation:
//  * linear and cubic interpolation reproduce a linear function exactly (cubic: away from the
//    border, where the replicated edge bends the spline), at skimage's sample positions
//    c = (o + 0.5) * n / m - 0.5;
//  * linear interpolation of a one-voxel indicator is the product of tent functions
//    max(0, 1 - |c - k|) per axis, so the label survives exactly where that product is >= 0.5;
//  * separate z with order_z 0 copies whole input slices (nearest, ties up);
//  * nnU-Net's separate-z decision and new-shape rounding on hand-picked spacings.
#include <gtest/gtest.h>

#include <cmath>

#include "preprocessing/resampling.h"

using namespace medseg;
using namespace medseg::preprocessing;

namespace {

int64_t numel(const Shape3& s) { return s[0] * s[1] * s[2]; }
int64_t resample_idx(const Shape3& s, int64_t z, int64_t y, int64_t x) { return (z * s[1] + y) * s[2] + x; }
double pos(int64_t o, int64_t n, int64_t m) { return (o + 0.5) * double(n) / double(m) - 0.5; }

// f = 2 * index along `axis` + 1.
std::vector<float> resample_ramp(const Shape3& s, int axis) {
  std::vector<float> v(static_cast<std::size_t>(numel(s)));
  for (int64_t z = 0; z < s[0]; ++z)
    for (int64_t y = 0; y < s[1]; ++y)
      for (int64_t x = 0; x < s[2]; ++x) {
        const int64_t i[3] = {z, y, x};
        v[resample_idx(s, z, y, x)] = static_cast<float>(2 * i[axis] + 1);
      }
  return v;
}

// Checks out(o) == 2 * c + 1 wherever c lies at least `margin` voxels inside [0, n - 1].
void expect_ramp(const std::vector<float>& out, const Shape3& in, const Shape3& os, int axis, double margin,
                 double tol) {
  int checked = 0;
  for (int64_t z = 0; z < os[0]; ++z)
    for (int64_t y = 0; y < os[1]; ++y)
      for (int64_t x = 0; x < os[2]; ++x) {
        const int64_t o[3] = {z, y, x};
        const double c = pos(o[axis], in[axis], os[axis]);
        if (c < margin || c > in[axis] - 1 - margin) continue;
        ASSERT_NEAR(out[resample_idx(os, z, y, x)], 2 * c + 1, tol)
            << "axis " << axis << " at " << z << "," << y << "," << x;
        ++checked;
      }
  EXPECT_GT(checked, 0);
}

}  // namespace

TEST(PreprocessingResample, NewShapeRoundsHalfToEven) {
  EXPECT_EQ(compute_new_shape({10, 20, 30}, {2, 1, 1}, {1, 1, 1}), (Shape3{20, 20, 30}));
  EXPECT_EQ(compute_new_shape({5, 7, 9}, {0.5, 0.5, 1}, {1, 1, 3}), (Shape3{2, 4, 3}));  // 2.5->2, 3.5->4, 3
}

TEST(PreprocessingResample, SeparateZDecision) {
  auto d = decide_separate_z(std::nullopt, {3.1, 1, 1}, {1, 1, 1});
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.axis, 0);
  EXPECT_FALSE(decide_separate_z(std::nullopt, {3, 1, 1}, {1, 1, 1}).enabled);  // ratio 3 is not > 3
  d = decide_separate_z(std::nullopt, {1, 1, 1}, {1, 4, 1});                    // anisotropic only after resampling
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.axis, 1);
  EXPECT_FALSE(decide_separate_z(std::nullopt, {1, 4, 4}, {1, 1, 1}).enabled);  // two axes tie
  d = decide_separate_z(true, {1, 1, 2}, {1, 1, 1});
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.axis, 2);
  EXPECT_FALSE(decide_separate_z(false, {5, 1, 1}, {1, 1, 1}).enabled);
}

TEST(PreprocessingResample, LinearAndCubicReproduceRampsInEachAxis) {
  const Shape3 in{20, 22, 24};
  const Shape3 outs[2] = {{31, 15, 37}, {13, 34, 17}};  // up- and downsampling mixed
  for (int axis = 0; axis < 3; ++axis)
    for (const Shape3& os : outs) {
      const auto v = resample_ramp(in, axis);
      const auto lin = resample_data(v, 1, in, os, {}, {1, 0});
      expect_ramp(lin, in, os, axis, 0.0, 1e-4);
      const auto cub = resample_data(v, 1, in, os, {}, {3, 0});
      // The edge-replicated border bends the spline; its effect decays by 0.268 per voxel.
      expect_ramp(cub, in, os, axis, 7.0, 2e-3);
    }
}

TEST(PreprocessingResample, LinearClampsAtTheBorderLikeEdgeMode) {
  const Shape3 in{1, 1, 4}, os{1, 1, 8};  // c(0) = -0.25, c(7) = 3.25: both outside the samples
  const auto out = resample_data(resample_ramp(in, 2), 1, in, os, {}, {1, 0});
  EXPECT_NEAR(out[0], 1.0, 1e-6);
  EXPECT_NEAR(out[7], 7.0, 1e-6);
  EXPECT_NEAR(out[1], 2 * 0.25 + 1, 1e-6);
}

TEST(PreprocessingResample, CubicIsClippedToTheInputRange) {
  const Shape3 in{1, 8, 8}, os{1, 20, 20};
  std::vector<float> step(64, 0.0f);
  for (int y = 0; y < 8; ++y)
    for (int x = 4; x < 8; ++x) step[y * 8 + x] = 10.0f;  // a cubic spline overshoots at the step
  const auto out = resample_data(step, 1, in, os, {}, {3, 0});
  for (float v : out) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LE(v, 10.0f);
  }
}

TEST(PreprocessingResample, OneVoxelLabelFollowsTheTentProduct) {
  struct Case {
    Shape3 in, out;
    Shape3 voxel;
  };
  const Case cases[] = {
      {{5, 5, 5}, {15, 15, 15}, {2, 2, 2}},  // x3: a sample lands on the voxel centre
      {{5, 5, 5}, {5, 5, 10}, {2, 2, 2}},    // x2 along one axis: weights 0.75
      {{5, 5, 5}, {10, 10, 10}, {2, 2, 2}},  // x2 in 3D: 0.75^3 < 0.5, the voxel vanishes
      {{7, 7, 7}, {5, 5, 5}, {3, 3, 3}},     // /1.4: c = 1.4 o + 0.2 hits 3.0
      {{7, 7, 7}, {5, 5, 5}, {2, 2, 2}},     // /1.4: best weight 0.6^3
  };
  for (const Case& k : cases) {
    std::vector<int16_t> seg(static_cast<std::size_t>(numel(k.in)), 0);
    seg[resample_idx(k.in, k.voxel[0], k.voxel[1], k.voxel[2])] = 3;
    const auto out = resample_seg(seg, k.in, k.out, {}, {1, 0});
    int64_t expected_count = 0, count = 0;
    for (int64_t z = 0; z < k.out[0]; ++z)
      for (int64_t y = 0; y < k.out[1]; ++y)
        for (int64_t x = 0; x < k.out[2]; ++x) {
          const int64_t o[3] = {z, y, x};
          double w = 1;
          for (int a = 0; a < 3; ++a) w *= std::max(0.0, 1 - std::abs(pos(o[a], k.in[a], k.out[a]) - k.voxel[a]));
          const int16_t v = out[resample_idx(k.out, z, y, x)];
          EXPECT_TRUE(v == 0 || v == 3);
          ASSERT_EQ(v == 3, w >= 0.5) << "weight " << w;
          expected_count += w >= 0.5;
          count += v == 3;
        }
    EXPECT_EQ(count, expected_count);
  }
}

// batchgenerators 0.25.5's resize_segmentation (nnU-Net 2.8.1's): argmax over the labels' resized masks,
// exact ties settled by the nearest-neighbour label when it is one of the tied ones, else the smaller label.
// Halving a row samples at c = 2 o + 0.5, midway between two voxels (weights 0.5 and 0.5); the nearest
// neighbour there is floor(c + 0.5) = the right one.
TEST(PreprocessingResample, SegmentationTiesGoToTheNearestLabel) {
  // [2 0 0 2] -> o = 0 ties 2 and 0, nearest is voxel 1 (0); o = 1 ties 0 and 2, nearest is voxel 3 (2).
  // (The old rule, every label reaching 0.5 painted in ascending order, gave [2 2].)
  EXPECT_EQ(resample_seg({2, 0, 0, 2}, {1, 1, 4}, {1, 1, 2}, {}, {1, 0}), (std::vector<int16_t>{0, 2}));
  // [5 1 3 5] -> one voxel at c = 1.5: 1 and 3 tie, the nearest (voxel 2) is 3.
  EXPECT_EQ(resample_seg({5, 1, 3, 5}, {1, 1, 4}, {1, 1, 1}, {}, {1, 0}), (std::vector<int16_t>{3}));
  // A 2x2x2 block sampled at its centre: labels 1 and 2 at 3/8 each, 3 at 2/8; the nearest neighbour
  // (voxel (1, 1, 1)) is a 3, which lost, so the smaller of the tied labels wins.
  EXPECT_EQ(resample_seg({3, 1, 1, 1, 2, 2, 2, 3}, {2, 2, 2}, {1, 1, 1}, {}, {1, 0}), (std::vector<int16_t>{1}));
}

TEST(PreprocessingResample, MinusOneIsKeptAsALabel) {
  const Shape3 in{3, 4, 4}, os{9, 12, 12};
  std::vector<int16_t> seg(static_cast<std::size_t>(numel(in)), 0);
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 4; ++x) seg[resample_idx(in, 0, y, x)] = -1;  // first slice outside the mask
  seg[resample_idx(in, 2, 2, 2)] = 1;
  const auto out = resample_seg(seg, in, os, {}, {1, 0});
  // Output slices 0..2 map to c <= 0.33 along z: nearer to slice 0 than slice 1, so -1 wins there.
  for (int64_t z = 0; z < 9; ++z)
    for (int64_t y = 0; y < 12; ++y)
      for (int64_t x = 0; x < 12; ++x) {
        const int16_t v = out[resample_idx(os, z, y, x)];
        if (z < 3) { ASSERT_EQ(v, -1); }
        if (z >= 3 && z < 6) { ASSERT_EQ(v, 0); }
      }
  EXPECT_EQ(out[resample_idx(os, 7, 7, 7)], 1);  // c = 2 exactly on the labelled voxel
}

TEST(PreprocessingResample, SeparateZCopiesWholeSlices) {
  const Shape3 in{4, 6, 6}, os{10, 9, 9};
  std::vector<float> v(static_cast<std::size_t>(numel(in)));
  for (int64_t i = 0; i < numel(in); ++i) v[i] = static_cast<float>(10 * (i / 36) + 5);  // slice k = 10k + 5
  const SeparateZ sep = decide_separate_z(std::nullopt, {5, 1, 1}, {2, 0.666, 0.666});
  ASSERT_TRUE(sep.enabled);
  ASSERT_EQ(sep.axis, 0);
  const auto out = resample_data(v, 1, in, os, sep, {3, 0});
  for (int64_t z = 0; z < os[0]; ++z) {
    const double c = pos(z, in[0], os[0]);
    const int64_t k = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::floor(c + 0.5)), 0), 3);
    for (int64_t i = 0; i < 81; ++i) ASSERT_NEAR(out[z * 81 + i], 10 * k + 5, 1e-4) << "slice " << z;
  }
  // Labels: the same nearest slice copy along z, in-plane one-hot linear.
  std::vector<int16_t> seg(static_cast<std::size_t>(numel(in)));
  for (int64_t i = 0; i < numel(in); ++i) seg[i] = static_cast<int16_t>(i / 36 - 1);  // -1, 0, 1, 2
  const auto s = resample_seg(seg, in, os, sep, {1, 0});
  for (int64_t z = 0; z < os[0]; ++z) {
    const int64_t k = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::floor(pos(z, 4, 10) + 0.5)), 0), 3);
    for (int64_t i = 0; i < 81; ++i) ASSERT_EQ(s[z * 81 + i], k - 1);
  }
}

TEST(PreprocessingResample, NearestTiesRoundUpWhenDownsamplingByTwo) {
  // 8 -> 4 along z: c = 2 o + 0.5, exactly between slices 2o and 2o+1; scipy's order 0 takes 2o+1.
  const Shape3 in{8, 2, 2}, os{4, 2, 2};
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<float>(i / 4);
  SeparateZ sep{true, 0};
  const auto out = resample_data(v, 1, in, os, sep, {3, 0});
  for (int z = 0; z < 4; ++z)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[z * 4 + i], 2 * z + 1);
}

TEST(PreprocessingResample, UnchangedShapeIsACopy) {
  const Shape3 s{3, 4, 5};
  const auto v = resample_ramp(s, 1);
  EXPECT_EQ(resample_data(v, 1, s, s, {}, {3, 0}), v);
}
