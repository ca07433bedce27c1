// The fused spatial pass (data/augment/resample.h) against the grid_sample formulation it replaced
// (spatial_reference.h): images within 1e-5, labels exactly, over random rotations and scalings,
// 90-degree rotations, anisotropic shapes, dummy-2D and 2D; and the loader's partial read (only the
// planned box of the case) against cropping the whole loader patch.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/cpu_features.h"
#include "data/augment/resample.h"
#include "data/augment/spatial.h"
#include "data/case_source.h"
#include "data/rng.h"
#include "spatial_reference.h"

using namespace medseg;
using namespace medseg::data;
using namespace medseg::data::augment;

namespace {

constexpr double kFusedPi = 3.14159265358979323846;

// Image: smooth ramp plus noise. Labels: blobs of 0..3 with a -1 border (as nnU-Net's preprocessed
// segmentations have outside the nonzero mask), or, with `noisy`, a random label per voxel, which
// makes ties in the vote as common as they can be.
Sample random_patch(int64_t C, const Shape3& s, uint64_t seed, bool noisy) {
  at::manual_seed(static_cast<int64_t>(seed));
  Sample out;
  out.data = at::randn({C, s[0], s[1], s[2]}) +
             at::arange(s[0] * s[1] * s[2], at::kFloat).reshape({1, s[0], s[1], s[2]}) * 0.01;
  if (noisy) {
    out.seg = at::randint(-1, 4, {1, s[0], s[1], s[2]}, at::kShort);
    return out;
  }
  at::Tensor z = at::arange(s[0], at::kFloat).view({-1, 1, 1}), y = at::arange(s[1], at::kFloat).view({1, -1, 1});
  at::Tensor x = at::arange(s[2], at::kFloat).view({1, 1, -1});
  at::Tensor r = ((z - s[0] / 2.0).pow(2) + (y - s[1] / 2.0).pow(2) + (x - s[2] / 3.0).pow(2)).sqrt();
  at::Tensor seg = at::zeros({s[0], s[1], s[2]}, at::kShort);
  seg.masked_fill_(r.lt(s[1] * 0.35), 1);
  seg.masked_fill_(r.lt(s[1] * 0.2), 2);
  seg.masked_fill_((x - s[2] * 0.7).abs().lt(1.5) & (y - s[1] * 0.5).abs().lt(3), 3);
  seg.masked_fill_(z.lt(1).expand_as(seg) | x.lt(1).expand_as(seg), -1);
  out.seg = seg.unsqueeze(0);
  return out;
}

SpatialParams random_params(Rng& rng, bool in_plane) {
  SpatialParams p;
  p.rotate = rng.bernoulli(0.8);
  p.scale = !p.rotate || rng.bernoulli(0.5);
  const double amax = in_plane ? kFusedPi : kFusedPi / 6;
  if (p.rotate)
    for (int d = 0; d < (in_plane ? 1 : 3); ++d) p.angles[d] = rng.uniform(-amax, amax);
  if (p.scale) p.scales.fill(rng.uniform(0.7, 1.4));
  return p;
}

void fused_expect_same(const Sample& fused, const Sample& ref, const std::string& what) {
  ASSERT_EQ(fused.data.sizes(), ref.data.sizes()) << what;
  ASSERT_EQ(fused.seg.sizes(), ref.seg.sizes()) << what;
  const double err = (fused.data - ref.data).abs().max().item<double>();
  EXPECT_LE(err, 1e-5) << what;
  const int64_t differ = fused.seg.ne(ref.seg).sum().item<int64_t>();
  EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << ref.seg.numel() << " labels differ";
}

void compare_many(const Shape3& loader, const Shape3& patch, bool in_plane, int trials, bool noisy, uint64_t seed) {
  Rng rng(seed);
  for (int t = 0; t < trials; ++t) {
    const Sample in = random_patch(2, loader, seed * 100 + static_cast<uint64_t>(t), noisy);
    const SpatialParams p = random_params(rng, in_plane);
    const std::string what = "trial " + std::to_string(t) + " angles " + std::to_string(p.angles[0]) + "," +
                             std::to_string(p.angles[1]) + "," + std::to_string(p.angles[2]) + " scale " +
                             std::to_string(p.scales[0]);
    fused_expect_same(apply_spatial(in, patch, p, in_plane), reference_spatial(in, patch, p, in_plane), what);
  }
}

}  // namespace

TEST(SpatialFused, EqualsGridSampleOnRandomRotationsAndScalings3D) {
  compare_many({30, 30, 30}, {16, 16, 16}, false, 12, false, 1);
  compare_many({30, 30, 30}, {16, 16, 16}, false, 8, true, 2);
}

TEST(SpatialFused, EqualsGridSampleOnAnisotropicAndOddShapes) {
  compare_many({21, 37, 28}, {9, 20, 15}, false, 10, false, 3);
  compare_many({13, 25, 31}, {7, 14, 17}, false, 6, true, 4);
}

TEST(SpatialFused, EqualsGridSampleInPlaneForDummy2DAnd2D) {
  compare_many({5, 40, 36}, {5, 24, 20}, true, 10, false, 5);  // dummy-2D: loader z == patch z
  compare_many({5, 40, 36}, {5, 24, 20}, true, 30, true, 6);
  compare_many({1, 45, 52}, {1, 30, 33}, true, 10, false, 7);  // 2D configuration
}

TEST(SpatialFused, EqualsGridSampleOnExactRightAnglesAndPureScaling) {
  const Sample in = random_patch(1, {18, 18, 18}, 9, true);
  for (int axis = 0; axis < 3; ++axis)
    for (double a : {kFusedPi / 2, -kFusedPi / 2, kFusedPi}) {
      SpatialParams p;
      p.rotate = true;
      p.angles[axis] = a;
      fused_expect_same(apply_spatial(in, {12, 12, 12}, p, false), reference_spatial(in, {12, 12, 12}, p, false),
                        "axis " + std::to_string(axis) + " angle " + std::to_string(a));
    }
  for (double f : {0.7, 1.0, 1.25, 1.4, 2.0}) {
    SpatialParams p;
    p.scale = true;
    p.scales.fill(f);
    fused_expect_same(apply_spatial(in, {12, 12, 12}, p, false), reference_spatial(in, {12, 12, 12}, p, false),
                      "scale " + std::to_string(f));
  }
}

TEST(SpatialFused, ReadingOnlyThePlannedBoxEqualsCroppingTheLoaderPatch) {
  // A case smaller than the loader patch on some axes, so the box reaches outside it (0 / -1 pads).
  InMemoryCaseSource cases;
  InMemoryCase c;
  c.id = "c";
  c.shape = {26, 40, 35};
  const int64_t n = c.shape[0] * c.shape[1] * c.shape[2];
  const Sample src = random_patch(1, c.shape, 11, false);
  c.data.assign(src.data.data_ptr<float>(), src.data.data_ptr<float>() + n);
  for (int64_t i = 0; i < n; ++i) c.seg.push_back(static_cast<int8_t>(src.seg.data_ptr<int16_t>()[i]));
  cases.add(std::move(c));
  const Shape3 loader{30, 36, 44}, patch{16, 20, 24};
  Rng rng(12);
  for (int t = 0; t < 10; ++t) {
    const Box box{{-3 + t, 2 - t, -5 + 2 * t}, {-3 + t + loader[0], 2 - t + loader[1], -5 + 2 * t + loader[2]}};
    Sample whole{at::empty({1, loader[0], loader[1], loader[2]}),
                 at::empty({1, loader[0], loader[1], loader[2]}, at::kShort)};
    cases.read_data(0, box, whole.data.data_ptr<float>(), 0.f);
    cases.read_seg(0, box, whole.seg.data_ptr<int16_t>(), -1);
    SpatialParams p = t % 3 == 0 ? SpatialParams{} : random_params(rng, false);
    const SpatialPlan plan = plan_spatial(loader, patch, p, false);
    Box part = plan.read_box(), read;
    for (int d = 0; d < 3; ++d) {
      read.lo[d] = box.lo[d] + part.lo[d];
      read.hi[d] = box.lo[d] + part.hi[d];
    }
    const Shape3 rs = read.shape();
    Sample region{at::empty({1, rs[0], rs[1], rs[2]}), at::empty({1, rs[0], rs[1], rs[2]}, at::kShort)};
    cases.read_data(0, read, region.data.data_ptr<float>(), 0.f);
    cases.read_seg(0, read, region.seg.data_ptr<int16_t>(), -1);
    fused_expect_same(apply_spatial(region, plan), reference_spatial(whole, patch, p, false),
                      "box " + std::to_string(t));
  }
}

TEST(SpatialFused, RegionOfTheWrongShapeIsRefused) {
  const SpatialPlan plan = plan_spatial({20, 20, 20}, {10, 10, 10}, SpatialParams{}, false);
  Sample wrong{at::zeros({1, 10, 10, 9}), at::zeros({1, 10, 10, 9}, at::kShort)};
  EXPECT_THROW(apply_spatial(wrong, plan), std::exception);
}

// The AVX-512 kernel of the 3D pass against the portable one, bit for bit: random rotations and scalings
// (up to 45 degrees, 0.6-1.6), patch widths that are not multiples of the 16 lanes, crops whose faces the samples
// reach (corners outside, voxels beyond the loader patch), random labels per voxel (votes everywhere) and blobs
// (mostly agreeing corners), two channels, image only and labels only.
TEST(SpatialFused, Avx512KernelEqualsThePortableOneBitForBit) {
  if (!cpu_features().avx512_core) GTEST_SKIP() << "this processor has no AVX-512 F/BW/DQ/VL";
  Rng rng(21);
  const Shape3 loaders[] = {{30, 30, 30}, {21, 37, 28}, {13, 25, 51}, {40, 20, 70}};
  const Shape3 patches[] = {{16, 16, 16}, {9, 20, 15}, {7, 14, 33}, {22, 11, 47}};
  for (int t = 0; t < 24; ++t) {
    const Shape3& loader = loaders[t % 4];
    const Shape3& patch = patches[t % 4];
    const Sample in = random_patch(2, loader, 300 + static_cast<uint64_t>(t), t % 2 == 0);
    SpatialParams p;
    p.rotate = p.scale = true;
    for (double& a : p.angles) a = rng.uniform(-kFusedPi / 4, kFusedPi / 4);
    for (double& s : p.scales) s = rng.uniform(0.6, 1.6);
    SpatialPlan plan = plan_spatial(loader, patch, p, false);
    // The whole loader patch as the crop: with t % 3 == 0 the map is read from it as planned, otherwise through a
    // crop narrower than the touched box, so that corners fall outside it.
    if (t % 3 != 0)
      for (int d = 0; d < 3; ++d) {
        plan.map.lo[d] = std::min<int64_t>(plan.map.lo[d] + 2, loader[d] - 4);
        plan.map.crop[d] = std::max<int64_t>(4, plan.map.crop[d] - 4);
      }
    const Box b = plan.read_box();
    auto cut = [&](const at::Tensor& x) {
      return x.slice(1, b.lo[0], b.hi[0]).slice(2, b.lo[1], b.hi[1]).slice(3, b.lo[2], b.hi[2]).contiguous();
    };
    const at::Tensor data = cut(in.data), seg = cut(in.seg);
    const std::string what = "trial " + std::to_string(t);
    for (int part = 0; part < 3; ++part) {  // image and labels, image only, labels only
      const bool with_image = part != 2, with_seg = part != 1;
      at::Tensor img[2], lab[2];
      for (int k = 0; k < 2; ++k) {
        img[k] = at::full({2, patch[0], patch[1], patch[2]}, 7.f);
        lab[k] = at::full({1, patch[0], patch[1], patch[2]}, 7, at::kShort);
        resample(plan.map, with_image ? data.data_ptr<float>() : nullptr, with_image ? 2 : 0,
                 with_seg ? seg.data_ptr<int16_t>() : nullptr, img[k].data_ptr<float>(), lab[k].data_ptr<int16_t>(),
                 k == 0 ? ResampleKernel::Auto : ResampleKernel::Portable);
      }
      EXPECT_TRUE(at::equal(img[0], img[1]))
          << what << " part " << part << ": images differ, largest " << (img[0] - img[1]).abs().max().item<float>();
      EXPECT_TRUE(at::equal(lab[0], lab[1]))
          << what << " part " << part << ": " << lab[0].ne(lab[1]).sum().item<int64_t>() << " labels differ";
    }
  }
}
