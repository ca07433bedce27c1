// nnUNetTrainerDA5's transforms (data/augment/{median_filter,sharpen,blank_rectangle,local_gaussian,axis_ops}.h,
// the DA5 spatial options) against independent facts: brute-force window medians with scipy's
// conventions, the Laplacian written out voxel by voxel, hand-computed box means, the normal CDF, torch's
// own rot90 / permute / grid_sampler, and the rule that a step run after mirroring equals the same step
// on reflected positions run before it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "core/torch_compat.h"
#include "data/augment/axis_ops.h"
#include "data/augment/blank_rectangle.h"
#include "data/augment/config.h"
#include "data/augment/draw.h"
#include "data/augment/local_gaussian.h"
#include "data/augment/median_filter.h"
#include "data/augment/pipeline.h"
#include "data/augment/resample.h"
#include "data/augment/sharpen.h"
#include "data/augment/spatial.h"
#include "data/rng.h"

using namespace medseg;
using namespace medseg::data;
using namespace medseg::data::augment;

namespace {

at::Tensor da5_random_volume(int64_t c, int64_t z, int64_t y, int64_t x, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v;
  for (int64_t i = 0; i < c * z * y * x; ++i) v.push_back(static_cast<float>(rng.uniform(-2, 2)));
  return at::tensor(v, at::kFloat).view({c, z, y, x});
}

// scipy.ndimage.median_filter(size=s, mode='reflect') written out: window [i - s//2, i - s//2 + s),
// borders d c b a | a b c d, the element of rank n // 2 of the sorted window; axes of length 1 as scipy
// sees them (each value repeated, reflect of a single value).
at::Tensor brute_median(const at::Tensor& v, int64_t s) {
  const int64_t Z = v.size(0), Y = v.size(1), X = v.size(2);
  auto refl = [](int64_t i, int64_t n) {
    while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - i - 1;
    return i;
  };
  at::Tensor out = at::empty_like(v);
  const auto a = v.accessor<float, 3>();
  auto o = out.accessor<float, 3>();
  for (int64_t z = 0; z < Z; ++z)
    for (int64_t y = 0; y < Y; ++y)
      for (int64_t x = 0; x < X; ++x) {
        std::vector<float> w;
        for (int64_t dz = 0; dz < s; ++dz)
          for (int64_t dy = 0; dy < s; ++dy)
            for (int64_t dx = 0; dx < s; ++dx)
              w.push_back(a[refl(z - s / 2 + dz, Z)][refl(y - s / 2 + dy, Y)][refl(x - s / 2 + dx, X)]);
        std::sort(w.begin(), w.end());
        o[z][y][x] = w[w.size() / 2];
      }
  return out;
}

}  // namespace

TEST(DA5Median, OneLineByHand) {
  // 1 x 1 x 5: reflect pads (1 | 1 5 2 8 3 | 3). Size 3: medians of (1 1 5) (1 5 2) (5 2 8) (2 8 3) (8 3 3).
  const at::Tensor line = at::tensor(std::vector<float>{1, 5, 2, 8, 3}).view({1, 1, 5});
  EXPECT_TRUE(median_filter(line, 3).equal(at::tensor(std::vector<float>{1, 2, 5, 3, 3}).view({1, 1, 5})));
  // Size 2: windows (i - 1, i), the upper of the two.
  EXPECT_TRUE(median_filter(line, 2).equal(at::tensor(std::vector<float>{1, 5, 5, 8, 8}).view({1, 1, 5})));
}

TEST(DA5Median, EverySizeEqualsTheBruteForceWindow) {
  for (int64_t s = 2; s <= 7; ++s) {
    const at::Tensor v = da5_random_volume(1, 6, 7, 5, 10 + static_cast<uint64_t>(s))[0];
    EXPECT_TRUE(median_filter(v, s).equal(brute_median(v, s))) << "size " << s;
    const at::Tensor flat = da5_random_volume(1, 1, 9, 8, 20 + static_cast<uint64_t>(s))[0];  // a 2D patch
    EXPECT_TRUE(median_filter(flat, s).equal(brute_median(flat, s))) << "2D, size " << s;
  }
}

TEST(DA5Sharpening, IsTheSixNeighbourLaplacianWithReplicatedBorders) {
  const at::Tensor v = da5_random_volume(1, 4, 5, 6, 3);
  at::Tensor d = v.clone();
  apply_sharpening(d, ChannelValues{{0}, {0.25}});
  const auto a = v.accessor<float, 4>();
  auto at_clamped = [&](int64_t z, int64_t y, int64_t x) {
    return static_cast<double>(
        a[0][std::clamp<int64_t>(z, 0, 3)][std::clamp<int64_t>(y, 0, 4)][std::clamp<int64_t>(x, 0, 5)]);
  };
  double worst = 0;
  for (int64_t z = 0; z < 4; ++z)
    for (int64_t y = 0; y < 5; ++y)
      for (int64_t x = 0; x < 6; ++x) {
        const double lap = 6 * at_clamped(z, y, x) - at_clamped(z - 1, y, x) - at_clamped(z + 1, y, x) -
                           at_clamped(z, y - 1, x) - at_clamped(z, y + 1, x) - at_clamped(z, y, x - 1) -
                           at_clamped(z, y, x + 1);
        worst = std::max(worst, std::abs(d[0][z][y][x].item<double>() - (at_clamped(z, y, x) + 0.25 * lap)));
      }
  EXPECT_LT(worst, 1e-5);
  // A 2D patch: BG2's 4-neighbour kernel (centre 4).
  const at::Tensor f = da5_random_volume(1, 1, 5, 5, 4);
  at::Tensor g = f.clone();
  apply_sharpening(g, ChannelValues{{0}, {1.0}});
  const double c = f[0][0][2][2].item<double>();
  const double lap = 4 * c - f[0][0][1][2].item<double>() - f[0][0][3][2].item<double>() -
                     f[0][0][2][1].item<double>() - f[0][0][2][3].item<double>();
  EXPECT_NEAR(g[0][0][2][2].item<double>(), c + lap, 1e-5);
}

TEST(DA5BlankRectangles, BoxesTakeTheirOwnMeanInTurn) {
  at::Tensor d = at::arange(2 * 4 * 4 * 4, at::kFloat).view({2, 4, 4, 4});
  const at::Tensor before = d.clone();
  std::vector<BlankRect> rects(2);
  rects[0].channel = 1;
  rects[0].box = {{0, 0, 0}, {2, 2, 2}};  // values 64 + {0,1,4,5,16,17,20,21}: mean 64 + 10.5
  rects[1].channel = 1;
  rects[1].box = {{1, 1, 1}, {2, 2, 3}};  // (1,1,1) is now 74.5, (1,1,2) is 64 + 22: mean 80.25
  apply_blank_rectangles(d, rects);
  EXPECT_TRUE(d[0].equal(before[0])) << "channel 0 untouched";
  EXPECT_FLOAT_EQ(d[1][0][0][0].item<float>(), 74.5f);
  EXPECT_FLOAT_EQ(d[1][1][1][1].item<float>(), 80.25f);
  EXPECT_FLOAT_EQ(d[1][1][1][2].item<float>(), 80.25f);
  EXPECT_FLOAT_EQ(d[1][3][3][3].item<float>(), before[1][3][3][3].item<float>());
}

TEST(DA5BlankRectangles, SizesFollowTheDA5RangesInsideThePatch) {
  AugmentConfig cfg;
  cfg.patch = {1, 40, 64};  // 2D: z of 1 gets edge 1
  cfg.da5();
  Rng rng(5);
  std::map<int64_t, int> counts;
  for (int i = 0; i < 2000; ++i)
    for (const BlankRect& r : sample_blank_rectangles(cfg, 2, rng)) {
      EXPECT_EQ(r.box.hi[0] - r.box.lo[0], 1);
      const int64_t h = r.box.hi[1] - r.box.lo[1], w = r.box.hi[2] - r.box.lo[2];
      EXPECT_GE(h, 4);  // [max(1, 40 // 10), 40 // 3) = [4, 13)
      EXPECT_LE(h, 12);
      EXPECT_GE(w, 6);  // [6, 21)
      EXPECT_LE(w, 20);
      EXPECT_GE(r.box.lo[2], 0);
      EXPECT_LE(r.box.hi[2], 64);
      ++counts[r.channel];
    }
  // Each channel with p 0.5, 1..4 boxes (mean 2.5): about 2000 * 0.5 * 2.5 = 2500 per channel.
  for (int64_t c : {0, 1}) EXPECT_NEAR(counts[c], 2500, 250) << "channel " << c;
}

TEST(DA5LocalKernel, IsTheVoxelIntegratedGaussianScaledToZeroOne) {
  LocalKernel k;
  k.centre = {0.0, 2.3, 7.0};
  k.sigma = {1.0, 1.5, 3.0};
  const at::Tensor kernel = local_kernel(k, {1, 6, 9}, at::kCPU);
  auto profile = [](int64_t i, double c, double s) {
    auto cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
    return cdf((i + 0.5 - c) / s) - cdf((i - 0.5 - c) / s);
  };
  double lo = 1e300, hi = -1e300;
  std::vector<double> raw;
  for (int64_t y = 0; y < 6; ++y)
    for (int64_t x = 0; x < 9; ++x) {
      raw.push_back(profile(y, 2.3, 1.5) * profile(x, 7.0, 3.0));
      lo = std::min(lo, raw.back());
      hi = std::max(hi, raw.back());
    }
  for (int64_t y = 0, i = 0; y < 6; ++y)
    for (int64_t x = 0; x < 9; ++x, ++i)
      EXPECT_NEAR(kernel[0][y][x].item<double>(), (raw[static_cast<size_t>(i)] - lo) / (hi - lo), 1e-5);
}

TEST(DA5LocalTransforms, GradientAddsAndLocalGammaBlendsByTheKernel) {
  LocalKernel k;
  k.channel = 0;
  k.centre = {1.0, 2.0, 3.0};
  k.sigma = {2.0, 2.0, 2.0};
  k.value = -2.5;
  const at::Tensor v = da5_random_volume(1, 3, 5, 6, 8);
  const at::Tensor kernel = local_kernel(k, {3, 5, 6}, at::kCPU);
  at::Tensor g = v.clone();
  apply_brightness_gradient(g, {k});
  EXPECT_TRUE(at::allclose(g[0], v[0] - 2.5 * kernel, 1e-5, 1e-5));
  k.value = 1.7;
  at::Tensor lg = v.clone();
  apply_local_gamma(lg, {k});
  const double mn = v.min().item<double>(), mx = v.max().item<double>();
  const at::Tensor n = (v[0].to(at::kDouble) - mn) / (mx - mn), kk = kernel.to(at::kDouble);
  const at::Tensor expect = (n * (1 - kk) + n.pow(1.7) * kk) * (mx - mn) + mn;
  EXPECT_TRUE(at::allclose(lg[0].to(at::kDouble), expect, 1e-5, 1e-5));
}

// nnU-Net runs rectangles, gradient, local gamma and sharpening after mirroring; medseg runs them
// before the flip on reflected positions. Both orders must give the same image.
TEST(DA5Mirror, StepsOnReflectedPositionsThenTheFlipEqualTheFlipThenTheSteps) {
  const at::Tensor v = da5_random_volume(2, 6, 7, 8, 12);
  const Shape3 patch{6, 7, 8};
  const std::vector<int64_t> axes{0, 2};
  std::vector<BlankRect> rects(1);
  rects[0].channel = 1;
  rects[0].box = {{1, 0, 2}, {3, 4, 7}};
  std::vector<LocalKernel> kernels(1);
  kernels[0].channel = 0;
  kernels[0].centre = {-1.5, 3.0, 9.2};
  kernels[0].sigma = {2.0, 3.0, 4.0};
  kernels[0].value = 3.0;
  auto steps = [&](at::Tensor t, const std::vector<BlankRect>& r, const std::vector<LocalKernel>& k) {
    apply_blank_rectangles(t, r);
    apply_brightness_gradient(t, k);
    std::vector<LocalKernel> gamma = k;
    gamma[0].value = 0.4;
    apply_local_gamma(t, gamma);
    apply_sharpening(t, ChannelValues{{0, 1}, {0.5, 0.9}});
    return t;
  };
  const at::Tensor nnunet = steps(v.flip({1, 3}).contiguous(), rects, kernels);
  std::vector<BlankRect> r2 = rects;
  std::vector<LocalKernel> k2 = kernels;
  reflect_rectangles(r2, axes, patch);
  reflect_kernels(k2, axes, patch);
  const at::Tensor medseg = steps(v.clone(), r2, k2).flip({1, 3});
  EXPECT_TRUE(at::allclose(medseg, nnunet, 1e-5, 1e-5)) << (medseg - nnunet).abs().max().item<double>();
}

TEST(DA5AxisOps, AxesAreThoseOfTheMostFrequentEdge) {
  EXPECT_EQ(equal_length_axes({96, 96, 96}, false), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(equal_length_axes({64, 128, 128}, false), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(equal_length_axes({128, 64, 128}, false), (std::vector<int64_t>{0, 2}));
  EXPECT_TRUE(equal_length_axes({64, 96, 128}, false).empty());
  EXPECT_EQ(equal_length_axes({1, 256, 256}, true), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(equal_length_axes({1, 256, 224}, true).empty());
}

TEST(DA5AxisOps, RotationsAndTransposesAreTorchsAndKeepImageAndLabelsAligned) {
  AugmentConfig cfg;
  cfg.patch = {5, 6, 6};
  cfg.da5();
  const at::Tensor v = at::arange(5 * 6 * 6, at::kFloat).view({1, 5, 6, 6});
  std::set<int64_t> ks;
  int transposed = 0, n = 400;
  Rng rng(3);
  for (int i = 0; i < n; ++i) {
    const AxisOps ops = sample_axis_ops(cfg, rng);
    ks.insert(ops.rot_k);
    if (ops.rot_k != 0) { EXPECT_EQ(ops.rot_axes, (std::array<int64_t, 2>{1, 2})); }
    at::Tensor expect = v;
    if (ops.rot_k != 0) expect = at::rot90(expect, ops.rot_k, {2, 3});
    if (!ops.order.empty()) {
      EXPECT_EQ(ops.order[0], 0);
      if (ops.order[1] == 2) expect = expect.transpose(2, 3);
      ++transposed;
    }
    EXPECT_TRUE(apply_axis_ops(v, ops).equal(expect.contiguous()));
  }
  EXPECT_EQ(ks, (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_NEAR(transposed, n / 2, 60);  // p 0.5 (a shuffle of two axes is the identity half the time)
}

TEST(DA5Spatial, RotationsPerAxisAndScalesPerAxisFollowTheirProbabilities) {
  AugmentConfig cfg;
  cfg.patch = {16, 16, 16};
  cfg.da5();
  Rng rng(17);
  int rotated = 0, zero_angles = 0, scaled = 0, distinct_scales = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const SpatialParams p = sample_spatial(cfg, rng);
    if (p.rotate) {
      ++rotated;
      for (double a : p.angles) zero_angles += a == 0 ? 1 : 0;
    }
    if (p.scale) {
      ++scaled;
      for (double s : p.scales) {
        EXPECT_GE(s, 0.7);
        EXPECT_LT(s, 1.43);
      }
      distinct_scales += (p.scales[0] != p.scales[1] && p.scales[1] != p.scales[2]) ? 1 : 0;
    }
  }
  EXPECT_NEAR(rotated, 0.4 * n, 4.5 * std::sqrt(n * 0.24));
  EXPECT_NEAR(zero_angles, 1.5 * rotated, 4.5 * std::sqrt(3 * rotated * 0.25));  // each of 3 axes kept with p 0.5
  EXPECT_NEAR(scaled, 0.2 * n, 4.5 * std::sqrt(n * 0.16));
  EXPECT_EQ(distinct_scales, scaled) << "p_synchronize_scaling_across_axes 0: a factor per axis";
}

namespace {

// grid_sample's normalised coordinates of the map's sample positions, as torch's grid_sampler takes them.
at::Tensor torch_grid(const SpatialMap& mp) {
  std::vector<float> g;
  for (int64_t i = 0; i < mp.patch[0]; ++i)
    for (int64_t j = 0; j < mp.patch[1]; ++j)
      for (int64_t k = 0; k < mp.patch[2]; ++k) {
        const double p[3] = {i - (mp.patch[0] - 1) / 2.0, j - (mp.patch[1] - 1) / 2.0, k - (mp.patch[2] - 1) / 2.0};
        double pos[3];
        for (int r = 0; r < 3; ++r) {
          const double q = mp.m[r][0] * p[0] + mp.m[r][1] * p[1] + mp.m[r][2] * p[2];
          pos[r] = q + (mp.loader[r] - 1) / 2.0 - static_cast<double>(mp.lo[r]);
        }
        for (int r = 2; r >= 0; --r) g.push_back(static_cast<float>((2 * pos[r] + 1) / mp.crop[r] - 1));
      }
  return at::tensor(g, at::kFloat).view({1, mp.patch[0], mp.patch[1], mp.patch[2], 3});
}

}  // namespace

TEST(DA5Spatial, NearestResamplingIsTorchsNearestGridSample) {
  AugmentConfig cfg;
  cfg.patch = {9, 10, 11};
  cfg.da5();
  cfg.nearest_image = cfg.nearest_seg = true;
  cfg.p_rotation = cfg.p_scaling = 1;
  Rng rng(23);
  const Shape3 loader{14, 15, 16};
  int64_t ties = 0;
  for (int t = 0; t < 6; ++t) {
    const SpatialPlan plan = plan_spatial(loader, cfg.patch, sample_spatial(cfg, rng), false);
    ASSERT_TRUE(plan.map.nearest_image && plan.map.nearest_seg);
    const Shape3& c = plan.map.crop;
    const at::Tensor img = da5_random_volume(2, c[0], c[1], c[2], 40 + static_cast<uint64_t>(t));
    const at::Tensor seg = img[0].mul(2).round().clamp(-1, 3).to(at::kShort).unsqueeze(0);
    const Sample out = apply_spatial(Sample{img, seg}, plan);
    const at::Tensor grid = torch_grid(plan.map);
    // Positions exactly between two voxels (common: an axis neither rotated nor scaled samples at
    // half-voxel offsets when the patch and the read box differ in parity) go to the even voxel, as
    // torch 2.x rounds them; LibTorch 1.13's kernel rounds them away from zero (core/torch_compat.h),
    // so there the oracle holds for the other positions only.
    const at::Tensor size =
        at::tensor(std::vector<float>{static_cast<float>(c[2]), static_cast<float>(c[1]), static_cast<float>(c[0])});
    const at::Tensor u = ((grid[0] + 1) * size - 1) / 2;
    const at::Tensor tie = (u - u.floor()).eq(0.5).any(-1);  // (patch)
    const at::Tensor compared = compat::kGridSampleNearestHalfToEven ? at::ones_like(tie) : tie.logical_not();
    const at::Tensor expect_img = at::grid_sampler(img.unsqueeze(0), grid, 1, 0, false)[0];
    EXPECT_TRUE(out.data.masked_select(compared).equal(expect_img.masked_select(compared))) << "draw " << t;
    // Labels: nearest on the label values; -1 beyond the loader patch's outer voxel centres.
    const at::Tensor labels = at::grid_sampler(seg.to(at::kFloat).unsqueeze(0), grid, 1, 0, false)[0].to(at::kShort);
    const at::Tensor inside = out.seg.ne(-1).logical_and(compared);
    EXPECT_TRUE(out.seg.masked_select(inside).equal(labels.masked_select(inside))) << "draw " << t;
    ties += tie.sum().item<int64_t>();
  }
  std::printf("positions exactly between two voxels: %lld\n", static_cast<long long>(ties));
}

TEST(DA5Pipeline, ASampleKeepsItsShapeAndItsLabels) {
  AugmentConfig cfg;
  cfg.patch = {12, 12, 12};
  cfg.da5();
  cfg.p_rotation = cfg.p_scaling = cfg.p_smoothing = cfg.p_blank = cfg.p_gradient = cfg.p_local_gamma = 1;
  cfg.p_sharpen = cfg.p_additive_brightness = cfg.p_contrast = cfg.p_lowres = 1;
  Sample in{da5_random_volume(2, 20, 20, 20, 2), at::zeros({1, 20, 20, 20}, at::kShort)};
  in.seg.slice(1, 6, 14).slice(2, 6, 14).slice(3, 6, 14).fill_(2);
  for (uint64_t seed = 0; seed < 6; ++seed) {
    Rng rng(seed);
    at::Generator gen = at::detail::createCPUGenerator(seed);
    const Sample out = augment_training_sample(in, cfg, rng, gen);
    EXPECT_EQ(out.data.sizes(), at::IntArrayRef({2, 12, 12, 12}));
    EXPECT_TRUE(out.data.isfinite().all().item<bool>());
    const at::Tensor labels = std::get<0>(at::_unique(out.seg));
    for (int64_t i = 0; i < labels.numel(); ++i) EXPECT_TRUE(labels[i].item<int>() == 0 || labels[i].item<int>() == 2);
  }
}
