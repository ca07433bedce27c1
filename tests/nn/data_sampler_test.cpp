// Patch sampling against nnU-Net's rules, with hand-computed bounds and sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "data/crop.h"
#include "data/patch_sampler.h"
#include "data/preprocessed_source.h"
#include "bench_support/synthetic_cases.h"

using namespace medseg;
using namespace medseg::data;

TEST(DataSampler, OversamplingRuleMatchesNnUNet) {
  // j >= round(bs * 0.67), Python rounding (half to even).
  EXPECT_FALSE(force_foreground(0, 2, 0.33));  // round(1.34) = 1
  EXPECT_TRUE(force_foreground(1, 2, 0.33));
  for (int j = 0; j < 3; ++j) EXPECT_FALSE(force_foreground(j, 5, 0.33));  // round(3.35) = 3
  EXPECT_TRUE(force_foreground(3, 5, 0.33));
  EXPECT_TRUE(force_foreground(4, 5, 0.33));
  EXPECT_FALSE(force_foreground(2, 4, 0.33));  // round(2.68) = 3
  EXPECT_TRUE(force_foreground(3, 4, 0.33));
  EXPECT_FALSE(force_foreground(0, 1, 0.33));  // round(0.67) = 1: bs 1 never forces
  EXPECT_TRUE(force_foreground(2, 5, 0.5));    // round(2.5) = 2 (half to even)
  EXPECT_FALSE(force_foreground(1, 5, 0.5));
}

TEST(DataSampler, InitialPatchSizeMatchesGetPatchSize) {
  const double deg = M_PI / 180;
  // 3D +-30 deg: rotating (32,48,48) about each axis gives max |coords| (51.71, 65.57, 57.57); / 0.85.
  EXPECT_EQ(initial_patch_size({32, 48, 48}, 30 * deg, false, false), (Shape3{60, 77, 67}));
  // 128^3: 128 (cos30 + sin30) = 174.85; / 0.85 = 205.7.
  EXPECT_EQ(initial_patch_size({128, 128, 128}, 30 * deg, false, false), (Shape3{205, 205, 205}));
  // Dummy 2D: +-180 deg capped at 90; 64 / 0.85 = 75.3; z keeps the final extent.
  EXPECT_EQ(initial_patch_size({8, 64, 64}, 180 * deg, true, false), (Shape3{8, 75, 75}));
  // 2D with +-15 deg: 56 cos15 + 40 sin15 = 64.44 -> 75; y keeps 40 -> 47.
  EXPECT_EQ(initial_patch_size({1, 56, 40}, 15 * deg, false, true), (Shape3{1, 75, 47}));
}

namespace {
std::pair<Shape3, Shape3> bounds_over_draws(const PatchSampler& s, const Shape3& shape, int draws) {
  Shape3 mn{1 << 30, 1 << 30, 1 << 30}, mx{-(1 << 30), -(1 << 30), -(1 << 30)};
  Rng rng(5);
  for (int i = 0; i < draws; ++i) {
    const auto c = s.choose(shape, false, {}, rng);
    for (int d = 0; d < 3; ++d) {
      mn[d] = std::min(mn[d], c.box.lo[d]);
      mx[d] = std::max(mx[d], c.box.lo[d]);
      EXPECT_EQ(c.box.hi[d] - c.box.lo[d], s.patch()[d]);
    }
  }
  return {mn, mx};
}
}  // namespace

TEST(DataSampler, RandomCropBoundsIncludeNeedToPad) {
  // need_to_pad (5, 4, 0): lo in [floor(-5/2), 16 + 3 - 21] = [-3, -2], y in [-2, 24 + 2 - 24] = [-2, 2].
  PatchSampler s({21, 24, 24}, {16, 20, 24});
  auto [mn, mx] = bounds_over_draws(s, {16, 24, 24}, 2000);
  EXPECT_EQ(mn, (Shape3{-3, -2, 0}));
  EXPECT_EQ(mx, (Shape3{-2, 2, 0}));
  // Case smaller than the patch: need grows to patch - shape = 6, so z starts at exactly -3.
  PatchSampler small({16, 24, 24}, {16, 24, 24});
  auto [mn2, mx2] = bounds_over_draws(small, {10, 30, 24}, 500);
  EXPECT_EQ(mn2[0], -3);
  EXPECT_EQ(mx2[0], -3);
  EXPECT_EQ(mn2[1], 0);
  EXPECT_EQ(mx2[1], 6);
}

TEST(DataSampler, ForcedPatchIsCentredOnAStoredVoxelOfAPresentClass) {
  const auto c = bench::make_synthetic_case("a", {16, 24, 24}, 1, 2, 11);
  ASSERT_FALSE(c.locations.at(1).empty());
  ASSERT_FALSE(c.locations.at(2).empty());
  ClassLocations locs = c.locations;
  locs[3] = {};  // a label absent from the case is never chosen
  PatchSampler s({12, 16, 16}, {12, 16, 16});
  Rng rng(3);
  int seen[4] = {0, 0, 0, 0};
  for (int i = 0; i < 400; ++i) {
    const auto p = s.choose(c.shape, true, locs, rng);
    ASSERT_GE(p.label, 1);
    ASSERT_LE(p.label, 2);
    ++seen[p.label];
    // The box holds the label: read it back and look.
    std::vector<int16_t> seg(static_cast<size_t>(p.box.numel()));
    copy_box(c.seg.data(), 1, c.shape, p.box, seg.data(), int16_t(-1));
    EXPECT_NE(std::find(seg.begin(), seg.end(), p.label), seg.end());
    // Lower corner = max(lower bound 0, voxel - patch // 2) for some stored voxel of the label.
    bool centred = false;
    for (const auto& v : c.locations.at(p.label)) {
      bool ok = true;
      for (int d = 0; d < 3; ++d) ok = ok && p.box.lo[d] == std::max<int64_t>(0, v[d] - s.patch()[d] / 2);
      centred = centred || ok;
    }
    EXPECT_TRUE(centred);
  }
  EXPECT_GT(seen[1], 100);
  EXPECT_GT(seen[2], 100);
}

TEST(DataSampler, ForcedWithoutForegroundFallsBackToRandomCrop) {
  PatchSampler s({8, 8, 8}, {8, 8, 8});
  Rng rng(1);
  ClassLocations none{{1, {}}};
  const auto p = s.choose({16, 16, 16}, true, none, rng);
  EXPECT_EQ(p.label, -1);
  for (int d = 0; d < 3; ++d) {
    EXPECT_GE(p.box.lo[d], 0);
    EXPECT_LE(p.box.lo[d], 8);
  }
}

TEST(DataSampler, BordersArePaddedWithZeroDataAndMinusOneSeg) {
  InMemoryCaseSource src;
  InMemoryCase c;
  c.id = "c";
  c.shape = {2, 3, 4};
  c.channels = 2;
  for (int i = 0; i < 48; ++i) c.data.push_back(float(i + 1));  // all non-zero
  for (int i = 0; i < 24; ++i) c.seg.push_back(int8_t(i % 3));
  src.add(c);
  Box b{{-1, 1, 2}, {1, 4, 6}};  // z -1..0, y 1..3, x 2..5
  std::vector<float> d(static_cast<size_t>(2 * b.numel()));
  std::vector<int16_t> sg(static_cast<size_t>(b.numel()));
  src.read_data(0, b, d.data(), 0.f);
  src.read_seg(0, b, sg.data(), -1);
  const Shape3 bs = b.shape();  // (2, 3, 4)
  for (int ch = 0; ch < 2; ++ch)
    for (int z = 0; z < bs[0]; ++z)
      for (int y = 0; y < bs[1]; ++y)
        for (int x = 0; x < bs[2]; ++x) {
          const int cz = z - 1, cy = y + 1, cx = x + 2;
          const bool inside = cz >= 0 && cy < 3 && cx < 4;
          const size_t o = static_cast<size_t>(((ch * bs[0] + z) * bs[1] + y) * bs[2] + x);
          const int src_idx = (cz * 3 + cy) * 4 + cx;
          EXPECT_EQ(d[o], inside ? float(ch * 24 + src_idx + 1) : 0.f);
          if (ch == 0) { EXPECT_EQ(sg[o], inside ? src_idx % 3 : -1); }
        }
}

TEST(DataSampler, ClassLocationsFollowNnUNetCounts) {
  std::vector<int8_t> seg(10 * 10 * 10, 0);
  for (int i = 0; i < 500; ++i) seg[static_cast<size_t>(i)] = 1;  // z 0..4
  const auto locs = class_locations_from_seg(seg.data(), {10, 10, 10}, {1, 2}, 100, 0.01);
  EXPECT_EQ(locs.at(1).size(), 100u);  // min(100, 500), >= ceil(5)
  EXPECT_TRUE(locs.at(2).empty());
  for (const auto& v : locs.at(1)) EXPECT_LT(v[0], 5);
  const auto few = class_locations_from_seg(seg.data(), {10, 10, 10}, {1}, 2, 0.01);
  EXPECT_EQ(few.at(1).size(), 5u);  // at least ceil(1% of 500)
}

// Partially annotated data (nnU-Net's ignore label): the sampler centres every patch it does not
// force on an annotated voxel. With annotated voxels only at two known places, a patch of 4 in a
// 32-long axis starts at exactly voxel - 2, never at a random place.
TEST(DataSampler, UnforcedPatchesOfPartiallyAnnotatedDataAreCentredOnAnnotatedVoxels) {
  PatchSampler s({4, 4, 4}, {4, 4, 4});
  Rng rng(7);
  const ClassLocations locs{{kAnnotatedClass, {{10, 20, 30}, {5, 6, 7}}}, {1, {{10, 20, 30}}}};
  std::set<int64_t> starts_z;
  for (int i = 0; i < 200; ++i) {
    const auto p = s.choose({32, 32, 32}, false, locs, rng);
    const bool first = p.box.lo == Shape3{8, 18, 28}, second = p.box.lo == Shape3{3, 4, 5};
    ASSERT_TRUE(first || second) << p.box.lo[0] << " " << p.box.lo[1] << " " << p.box.lo[2];
    starts_z.insert(p.box.lo[0]);
  }
  EXPECT_EQ(starts_z.size(), 2u) << "both annotated voxels are drawn";
}

// Forced patches pick among the foreground labels, never the annotated-voxels class while the case
// has foreground; a case with annotated voxels but no foreground centres on an annotated one; a case
// with neither falls back to a random crop.
TEST(DataSampler, ForcedPatchesOfPartiallyAnnotatedDataPreferForeground) {
  PatchSampler s({4, 4, 4}, {4, 4, 4});
  Rng rng(9);
  const ClassLocations with_fg{{kAnnotatedClass, {{5, 6, 7}}}, {2, {{10, 20, 30}}}};
  for (int i = 0; i < 50; ++i) {
    const auto p = s.choose({32, 32, 32}, true, with_fg, rng);
    ASSERT_EQ(p.label, 2);
    ASSERT_EQ(p.box.lo, (Shape3{8, 18, 28}));
  }
  const ClassLocations no_fg{{kAnnotatedClass, {{5, 6, 7}}}, {2, {}}};
  const auto q = s.choose({32, 32, 32}, true, no_fg, rng);
  EXPECT_EQ(q.label, kAnnotatedClass);
  EXPECT_EQ(q.box.lo, (Shape3{3, 4, 5}));
  const ClassLocations nothing{{kAnnotatedClass, {}}, {2, {}}};
  EXPECT_EQ(s.choose({32, 32, 32}, true, nothing, rng).label, -1);
  EXPECT_EQ(s.choose({32, 32, 32}, false, nothing, rng).label, -1);
}

// The properties JSON names the annotated-voxels class by its values, background included
// ("0,1,2"); plain labels keep their value, regions a position-based id.
TEST(DataSampler, SamplingClassIdsOfStoredKeys) {
  EXPECT_EQ(sampling_class_id("2", 0), 2);
  EXPECT_EQ(sampling_class_id("0,1,2", 2), kAnnotatedClass);
  EXPECT_EQ(sampling_class_id("1,2,3", 0), 1000);
  EXPECT_EQ(sampling_class_id("2,3", 1), 1001);
  EXPECT_EQ(sampling_class_id("10,20", 1), 1001) << "a value ending in 0 is not background";
}
