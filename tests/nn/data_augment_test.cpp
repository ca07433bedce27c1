// Augmentation transforms against independent facts: index arithmetic for crops, flips and
// 90-degree rotations, closed forms for the intensity transforms, hand-computed resampling.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "data/augment/brightness.h"
#include "data/augment/contrast.h"
#include "data/augment/deep_supervision.h"
#include "data/augment/finish.h"
#include "data/augment/gamma.h"
#include "data/augment/gaussian_blur.h"
#include "data/augment/gaussian_noise.h"
#include "data/augment/low_resolution.h"
#include "data/augment/pipeline.h"
#include "data/augment/resize.h"
#include "data/augment/spatial.h"

using namespace medseg::data;
using namespace medseg::data::augment;

namespace {
constexpr double kPi = 3.14159265358979323846;

Sample ramp_sample(int64_t c, int64_t z, int64_t y, int64_t x) {
  Sample s;
  s.data = at::arange(c * z * y * x, at::kFloat).reshape({c, z, y, x}).mul_(0.01);
  // Labels -1..2 in an irregular pattern, so every symmetry error shows.
  s.seg = at::arange(z * y * x, at::kLong).reshape({1, z, y, x});
  s.seg = (s.seg * 7 + s.seg / 5).remainder(4).sub_(1).to(at::kShort);
  return s;
}
}  // namespace

TEST(DataAugment, AllProbabilitiesZeroIsACentreCropAndMinusOneToZero) {
  Sample in = ramp_sample(2, 10, 9, 12);
  AugmentConfig cfg;
  cfg.patch = {6, 4, 12};
  cfg.disabled();
  Rng rng(1);
  at::Generator gen = at::detail::createCPUGenerator(1);
  Sample out = augment_training_sample(in, cfg, rng, gen);
  // Start = floor(S / 2) - P // 2 = (5 - 3, 4 - 2, 6 - 6) = (2, 2, 0).
  EXPECT_TRUE(out.data.equal(in.data.slice(1, 2, 8).slice(2, 2, 6)));
  at::Tensor expect_seg = in.seg.slice(1, 2, 8).slice(2, 2, 6).clone();
  expect_seg.masked_fill_(expect_seg.eq(-1), 0);
  EXPECT_TRUE(out.seg.equal(expect_seg));
  // Same size: identity (with -1 -> 0), and the input is left untouched.
  cfg.patch = {10, 9, 12};
  Sample same = augment_training_sample(in, cfg, rng, gen);
  EXPECT_TRUE(same.data.equal(in.data));
  EXPECT_TRUE(same.seg.equal(in.seg.clamp_min(0)));
  EXPECT_EQ(in.seg.lt(0).sum().item<int64_t>() > 0, true);
}

TEST(DataAugment, CentreCropPadsOutside) {
  at::Tensor t = at::ones({1, 2, 2, 2}, at::kFloat);
  at::Tensor c = center_crop(t, {4, 2, 2}, 0.0);  // start = 1 - 2 = -1: one padded plane each side
  EXPECT_EQ(c.sum().item<float>(), 8.f);
  EXPECT_EQ(c[0][0].sum().item<float>(), 0.f);
  EXPECT_EQ(c[0][3].sum().item<float>(), 0.f);
  at::Tensor s = center_crop(at::zeros({1, 2, 2, 2}, at::kShort), {4, 2, 2}, -1.0);
  EXPECT_EQ(s[0][0][0][0].item<int16_t>(), -1);
  EXPECT_EQ(s[0][1][0][0].item<int16_t>(), 0);
}

namespace {
Sample finished(const Sample& s, const std::vector<int64_t>& axes, const std::vector<int>& mask) {
  Sample out{at::empty_like(s.data), at::empty_like(s.seg)};
  finish_sample(s, axes, mask, out.data.data_ptr<float>(), out.seg.data_ptr<int16_t>());
  return out;
}
}  // namespace

TEST(DataAugment, MirrorFlipsExactly) {
  Sample orig = ramp_sample(2, 3, 4, 5);
  Sample s = finished(orig, {0, 2}, {});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t z = 0; z < 3; ++z)
      for (int64_t y = 0; y < 4; ++y)
        for (int64_t x = 0; x < 5; ++x) {
          EXPECT_EQ(s.data[c][z][y][x].item<float>(), orig.data[c][2 - z][y][4 - x].item<float>());
          const int16_t l = orig.seg[0][2 - z][y][4 - x].item<int16_t>();
          if (c == 0) { EXPECT_EQ(s.seg[0][z][y][x].item<int16_t>(), l == -1 ? 0 : l); }
        }
  // Every combination of axes against torch's flip.
  for (int bits = 0; bits < 8; ++bits) {
    std::vector<int64_t> axes, dims;
    for (int64_t a = 0; a < 3; ++a)
      if (bits >> a & 1) {
        axes.push_back(a);
        dims.push_back(a + 1);
      }
    Sample f = finished(orig, axes, {});
    EXPECT_TRUE(f.data.equal(dims.empty() ? orig.data : orig.data.flip(dims))) << bits;
    EXPECT_TRUE(f.seg.equal((dims.empty() ? orig.seg : orig.seg.flip(dims)).clamp_min(0))) << bits;
  }
}

TEST(DataAugment, Rotation90AboutEachAxisIsATransposeAndFlip) {
  // Output offset p samples the input at A p. Rx(90) sends p to (p0, -p2, p1): out[z][y][x] =
  // in[z][N-1-x][y], i.e. transpose(y, x) then flip x. Rz(90) sends p to (-p1, p0, p2):
  // out[z][y][x] = in[N-1-y][z][x], i.e. transpose(z, y) then flip y.
  Sample in = ramp_sample(2, 12, 12, 12);
  SpatialParams p;
  p.rotate = true;
  p.angles = {kPi / 2, 0, 0};
  Sample rx = apply_spatial(in, {12, 12, 12}, p, false);
  EXPECT_TRUE(rx.data.allclose(in.data.transpose(2, 3).flip({3}), 1e-5, 1e-5));
  EXPECT_TRUE(rx.seg.equal(in.seg.transpose(2, 3).flip({3})));
  p.angles = {0, 0, kPi / 2};
  Sample rz = apply_spatial(in, {12, 12, 12}, p, false);
  EXPECT_TRUE(rz.data.allclose(in.data.transpose(1, 2).flip({2}), 1e-5, 1e-5));
  EXPECT_TRUE(rz.seg.equal(in.seg.transpose(1, 2).flip({2})));
  // In-plane (dummy-2D) rotation by 90 degrees: every z-slice like Rx.
  Sample flat = ramp_sample(1, 3, 10, 10);
  p.angles = {kPi / 2, 0, 0};
  Sample r2 = apply_spatial(flat, {3, 10, 10}, p, true);
  EXPECT_TRUE(r2.data.allclose(flat.data.transpose(2, 3).flip({3}), 1e-5, 1e-5));
  EXPECT_TRUE(r2.seg.equal(flat.seg.transpose(2, 3).flip({3})));
}

TEST(DataAugment, OutputDependsOnlyOnTheSampledNeighbourhood) {
  // A 10^3 patch rotated by about 20 degrees and zoomed by 0.8 samples within 6.5 voxels of the input
  // centre. Embedding the same 18^3 input in a 30^3 one with different surroundings must not change
  // the result (the resampler reads only a crop around the sampled positions).
  Sample small = ramp_sample(2, 18, 18, 18);
  Sample big{at::full({2, 30, 30, 30}, 7.f), at::full({1, 30, 30, 30}, 3, at::kShort)};
  big.data.slice(1, 6, 24).slice(2, 6, 24).slice(3, 6, 24).copy_(small.data);
  big.seg.slice(1, 6, 24).slice(2, 6, 24).slice(3, 6, 24).copy_(small.seg);
  SpatialParams p;
  p.rotate = p.scale = true;
  p.angles = {0.35, -0.2, 0.3};
  p.scales.fill(0.8);
  Sample a = apply_spatial(small, {10, 10, 10}, p, false);
  Sample b = apply_spatial(big, {10, 10, 10}, p, false);
  EXPECT_TRUE(a.data.allclose(b.data, 1e-4, 1e-4));
  EXPECT_TRUE(a.seg.equal(b.seg));
  EXPECT_EQ(b.seg.eq(3).sum().item<int64_t>(), 0);  // the surroundings were never reached
}

TEST(DataAugment, ScalingMarksSamplesOutsideTheInputAsMinusOne) {
  // Scale 2 on an 8^3 input: offsets +-0.5, +-1.5 sample at +-1, +-3 (inside, |q| <= 3.5);
  // +-2.5, +-3.5 sample at +-5, +-7 (outside). So only indices 2..5 per axis stay labelled.
  Sample in{at::ones({1, 8, 8, 8}, at::kFloat), at::ones({1, 8, 8, 8}, at::kShort)};
  SpatialParams p;
  p.scale = true;
  p.scales.fill(2.0);
  Sample out = apply_spatial(in, {8, 8, 8}, p, false);
  at::Tensor expect = at::full({1, 8, 8, 8}, -1, at::kShort);
  expect.slice(1, 2, 6).slice(2, 2, 6).slice(3, 2, 6).fill_(1);
  EXPECT_TRUE(out.seg.equal(expect));
  EXPECT_TRUE(out.data.slice(1, 2, 6).slice(2, 2, 6).slice(3, 2, 6).eq(1).all().item<bool>());
}

TEST(DataAugment, BrightnessMultiplies) {
  at::Tensor d = at::arange(16, at::kFloat).reshape({2, 2, 2, 2});
  at::Tensor orig = d.clone();
  apply_brightness(d, {1.25, 0.8});
  EXPECT_TRUE(d[0].allclose(orig[0] * 1.25));
  EXPECT_TRUE(d[1].allclose(orig[1] * 0.8));
}

TEST(DataAugment, ContrastAroundMeanPreservesRange) {
  at::Tensor d = at::tensor({0.f, 1.f, 2.f, 5.f}).reshape({1, 1, 1, 4});
  apply_contrast(d, {0}, {2.0});  // mean 2: (x - 2) * 2 + 2 = (-2, 0, 2, 8), clamped to [0, 5]
  EXPECT_TRUE(d.flatten().equal(at::tensor({0.f, 0.f, 2.f, 5.f})));
  at::Tensor e = at::tensor({0.f, 1.f, 2.f, 5.f}).reshape({1, 1, 1, 4});
  apply_contrast(e, {0}, {0.5});  // (-1, -0.5, 0, 1.5) / ... : (1, 1.5, 2, 3.5)
  EXPECT_TRUE(e.flatten().allclose(at::tensor({1.f, 1.5f, 2.f, 3.5f})));
}

TEST(DataAugment, GammaClosedFormsAndRetainedStatistics) {
  at::Tensor d = at::tensor({0.f, 0.25f, 1.f}).reshape({1, 1, 1, 3});
  apply_gamma(d, {2.0}, false, false);  // range [0, 1]: x^2
  EXPECT_TRUE(d.flatten().allclose(at::tensor({0.f, 0.0625f, 1.f})));
  at::Tensor inv = at::tensor({0.f, 0.25f, 1.f}).reshape({1, 1, 1, 3});
  // Inverted: -x = (0, -0.25, -1) -> ((v + 1) / 1)^2 - 1 = (0, -0.4375, -1) -> negated back.
  apply_gamma(inv, {2.0}, true, false);
  EXPECT_TRUE(inv.flatten().allclose(at::tensor({0.f, 0.4375f, 1.f})));
  at::Tensor r = at::randn({2, 4, 5, 6}, at::detail::createCPUGenerator(3));
  const double m0 = r[0].mean().item<double>(), s0 = r[0].std().item<double>();
  const double m1 = r[1].mean().item<double>(), s1 = r[1].std().item<double>();
  at::Tensor before = r.clone();
  apply_gamma(r, {0.7, 1.5}, true, true);
  EXPECT_NEAR(r[0].mean().item<double>(), m0, 1e-5);
  EXPECT_NEAR(r[0].std().item<double>(), s0, 1e-5);
  EXPECT_NEAR(r[1].mean().item<double>(), m1, 1e-5);
  EXPECT_NEAR(r[1].std().item<double>(), s1, 1e-5);
  EXPECT_FALSE(r.allclose(before));
}

TEST(DataAugment, GaussianNoiseHasTheDrawnStd) {
  at::Tensor d = at::zeros({2, 16, 32, 32}, at::kFloat);
  at::Generator gen = at::detail::createCPUGenerator(9);
  add_gaussian_noise(d, 0.05, gen);
  EXPECT_NEAR(d.std().item<double>(), 0.05, 0.05 * 0.02);
  EXPECT_NEAR(d.mean().item<double>(), 0.0, 1e-3);
  AugmentConfig cfg;
  Rng rng(2);
  for (int i = 0; i < 100; ++i) {
    const double s = sample_noise_std(cfg, rng);
    EXPECT_GE(s, 0.0);
    EXPECT_LT(s, 0.1);
  }
}

TEST(DataAugment, BlurKernelAndImpulseResponse) {
  // size = nearest odd of 6 sigma + 0.5: sigma 0.5 -> 3.5 -> 3 taps, sigma 1 -> 6.5 -> 7 taps.
  EXPECT_EQ(gaussian_kernel(0.5).size(), 3u);
  const auto k = gaussian_kernel(1.0);
  ASSERT_EQ(k.size(), 7u);
  double sum = 0;
  for (float v : k) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_NEAR(k[4] / k[3], std::exp(-0.5), 1e-6);
  EXPECT_NEAR(k[5] / k[3], std::exp(-2.0), 1e-6);
  // An impulse along x (y, z of length 1 are skipped) returns the kernel.
  at::Tensor d = at::zeros({1, 1, 1, 15}, at::kFloat);
  d[0][0][0][7] = 1.f;
  blur_channel(d, 0, {1.0, 1.0, 1.0});
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(d[0][0][0][4 + i].item<float>(), k[static_cast<size_t>(i)], 1e-7);
  EXPECT_EQ(d[0][0][0][3].item<float>(), 0.f);
  // Reflect padding keeps a constant image constant.
  at::Tensor c = at::full({1, 5, 6, 7}, 3.f);
  blur_channel(c, 0, {0.7, 0.9, 1.0});
  EXPECT_TRUE(c.allclose(at::full({1, 5, 6, 7}, 3.f), 1e-5, 1e-5));
}

TEST(DataAugment, LowResolutionNearestDownLinearUp) {
  // x = (0, 1, 2, 3), zoom 0.5 on x: nearest-exact keeps indices floor((i + 0.5) * 2) = 1, 3 -> (1, 3);
  // linear up (align_corners=False) samples at -0.25, 0.25, 0.75, 1.25 -> (1, 1.5, 2.5, 3).
  at::Tensor d = at::tensor({0.f, 1.f, 2.f, 3.f}).reshape({1, 1, 1, 4});
  LowResParams p;
  p.channels = {0};
  p.zooms = {{1.0, 1.0, 0.5}};
  apply_low_resolution(d, p);
  EXPECT_TRUE(d.flatten().allclose(at::tensor({1.f, 1.5f, 2.5f, 3.f})));
  AugmentConfig cfg;
  cfg.dummy_2d = true;
  cfg.lowres_p_channel = 1.0;
  Rng rng(4);
  const auto s = sample_low_resolution(cfg, 2, rng);
  ASSERT_EQ(s.zooms.size(), 2u);
  EXPECT_EQ(s.zooms[0][0], 1.0);  // dummy-2D leaves z alone
  EXPECT_EQ(s.zooms[0][1], s.zooms[0][2]);
}

TEST(DataAugment, DeepSupervisionScalesAndNearestTargets) {
  const auto scales = deep_supervision_scales({{1, 1, 1}, {2, 2, 2}, {2, 2, 2}, {2, 2, 1}});
  ASSERT_EQ(scales.size(), 3u);
  EXPECT_EQ(scales[1], (Scale3{0.5, 0.5, 0.5}));
  EXPECT_EQ(scales[2], (Scale3{0.25, 0.25, 0.25}));
  const auto s2d = deep_supervision_scales({{1, 1}, {2, 2}, {2, 1}});
  ASSERT_EQ(s2d.size(), 2u);
  EXPECT_EQ(s2d[1], (Scale3{1.0, 0.5, 0.5}));

  at::Tensor seg = at::arange(2 * 8 * 12 * 16, at::kLong).remainder(97).to(at::kShort).reshape({2, 1, 8, 12, 16});
  const auto t = downsample_targets(seg, scales);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_TRUE(t[0].equal(seg));
  EXPECT_EQ(t[1].sizes(), (std::vector<int64_t>{2, 1, 4, 6, 8}));
  EXPECT_EQ(t[2].sizes(), (std::vector<int64_t>{2, 1, 2, 3, 4}));
  EXPECT_EQ(t[1].scalar_type(), at::kShort);
  // nearest-exact: output i reads floor((i + 0.5) / scale) = 2i + 1 (scale 1/2), 4i + 2 (scale 1/4).
  for (int64_t z = 0; z < 2; ++z)
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t x = 0; x < 4; ++x) {
        EXPECT_EQ(t[1][1][0][z][y][x].item<int16_t>(), seg[1][0][2 * z + 1][2 * y + 1][2 * x + 1].item<int16_t>());
        EXPECT_EQ(t[2][1][0][z][y][x].item<int16_t>(), seg[1][0][4 * z + 2][4 * y + 2][4 * x + 2].item<int16_t>());
      }
}

TEST(DataAugment, MaskImageAndRemoveLabel) {
  Sample s;
  s.data = at::ones({2, 1, 1, 3}, at::kFloat);
  s.seg = at::tensor({-1, 0, 2}, at::kShort).reshape({1, 1, 1, 3});
  Sample f = finished(s, {}, {1});
  EXPECT_TRUE(f.data[0].flatten().equal(at::ones({3})));
  EXPECT_TRUE(f.data[1].flatten().equal(at::tensor({0.f, 1.f, 1.f})));
  EXPECT_TRUE(f.seg.flatten().equal(at::tensor({0, 0, 2}, at::kShort)));
  // Masking follows the mirrored segmentation; other negative labels are masked but kept.
  s.seg = at::tensor({-1, -2, 2}, at::kShort).reshape({1, 1, 1, 3});
  f = finished(s, {2}, {0});
  EXPECT_TRUE(f.data[0].flatten().equal(at::tensor({1.f, 0.f, 0.f})));
  EXPECT_TRUE(f.data[1].flatten().equal(at::ones({3})));
  EXPECT_TRUE(f.seg.flatten().equal(at::tensor({2, -2, 0}, at::kShort)));
}

TEST(DataAugment, FullPipelineProducesFinalPatchWithoutMinusOne) {
  AugmentConfig cfg;
  cfg.patch = {8, 10, 12};
  cfg.p_rotation = cfg.p_scaling = cfg.p_noise = cfg.p_blur = cfg.p_brightness = cfg.p_contrast = 1.0;
  cfg.p_lowres = cfg.p_gamma_inverted = cfg.p_gamma = 1.0;
  cfg.mask_channels = {0};
  Sample in = ramp_sample(2, 14, 16, 18);
  for (uint64_t seed = 0; seed < 4; ++seed) {
    Rng rng(seed);
    at::Generator gen = at::detail::createCPUGenerator(seed);
    Sample out = augment_training_sample(in, cfg, rng, gen);
    EXPECT_EQ(out.data.sizes(), (std::vector<int64_t>{2, 8, 10, 12}));
    EXPECT_EQ(out.seg.sizes(), (std::vector<int64_t>{1, 8, 10, 12}));
    EXPECT_TRUE(out.data.isfinite().all().item<bool>());
    EXPECT_EQ(out.seg.lt(0).sum().item<int64_t>(), 0);
    EXPECT_LE(out.seg.max().item<int16_t>(), 2);
  }
}

// The hand-written intensity loops against the torch ops they replaced, on random volumes with odd,
// anisotropic shapes.
namespace {
at::Tensor random_volume(int64_t c, int64_t z, int64_t y, int64_t x, uint64_t seed) {
  at::manual_seed(static_cast<int64_t>(seed));
  return at::randn({c, z, y, x}) * 3 + 1;
}
}  // namespace

TEST(DataAugment, LowResolutionEqualsTorchInterpolate) {
  at::Tensor d = random_volume(2, 9, 17, 12, 1);
  LowResParams p;
  p.channels = {1};
  p.zooms = {{0.6, 0.75, 0.5}};
  at::Tensor expect = d.clone();
  const std::vector<int64_t> small{5, 13, 6}, full{9, 17, 12};  // round(S * zoom), half to even
  at::Tensor down = resize_nearest_exact(d[1].unsqueeze(0).unsqueeze(0), small);
  expect[1].copy_(at::upsample_trilinear3d(down, full, false)[0][0]);
  apply_low_resolution(d, p);
  EXPECT_TRUE(d.allclose(expect, 1e-5, 1e-5)) << (d - expect).abs().max().item<float>();
}

TEST(DataAugment, BlurEqualsTorchConvolutionWithReflectPadding) {
  at::Tensor d = random_volume(1, 8, 13, 11, 2);
  const std::array<double, 3> sigma{0.6, 0.9, 0.75};
  at::Tensor x = d.unsqueeze(0);  // (1, 1, z, y, x)
  for (int axis = 0; axis < 3; ++axis) {
    const auto k = gaussian_kernel(sigma[static_cast<size_t>(axis)]);
    const int64_t half = static_cast<int64_t>(k.size()) / 2;
    std::vector<int64_t> pad(6, 0), shape{1, 1, 1, 1, 1};
    pad[static_cast<size_t>(2 * (2 - axis))] = pad[static_cast<size_t>(2 * (2 - axis) + 1)] = half;
    shape[static_cast<size_t>(2 + axis)] = static_cast<int64_t>(k.size());
    at::Tensor w = at::tensor(k).reshape(shape);
    x = at::conv3d(at::reflection_pad3d(x, pad), w);
  }
  BlurParams p;
  p.channels = {0};
  p.sigmas = {sigma};
  apply_blur(d, p);
  EXPECT_TRUE(d.allclose(x[0], 1e-5, 1e-5)) << (d - x[0]).abs().max().item<float>();
}

TEST(DataAugment, GammaAndContrastEqualTheTorchFormulation) {
  for (bool invert : {false, true}) {
    at::Tensor d = random_volume(2, 7, 9, 10, 3);
    at::Tensor expect = d.clone();
    const std::vector<double> g{0.8, 1.3};
    for (int64_t c = 0; c < 2; ++c) {
      at::Tensor v = expect[c].to(at::kDouble);
      if (invert) v = -v;
      const double m = v.mean().item<double>(), s = v.std().item<double>();
      const double lo = v.min().item<double>(), r = v.max().item<double>() - lo;
      v = ((v - lo) / r).pow(g[static_cast<size_t>(c)]) * r + lo;
      v = (v - v.mean()) * (s / v.std()) + m;
      expect[c].copy_(invert ? -v : v);
    }
    apply_gamma(d, g, invert);
    EXPECT_TRUE(d.allclose(expect, 1e-4, 1e-4)) << invert << " " << (d - expect).abs().max().item<float>();
  }
  at::Tensor d = random_volume(2, 5, 6, 7, 4);
  at::Tensor expect = d.clone();
  for (int64_t c = 0; c < 2; ++c) {
    at::Tensor v = expect[c];
    const double m = v.to(at::kDouble).mean().item<double>();
    expect[c].copy_(((v - m) * (c == 0 ? 1.2 : 0.8) + m).clamp(v.min().item<float>(), v.max().item<float>()));
  }
  apply_contrast(d, {0, 1}, {1.2, 0.8});
  EXPECT_TRUE(d.allclose(expect, 1e-5, 1e-5));
}

// The one-pass host resize (int16 labels, float images) against torch's own nearest-exact interpolation, on
// shrinking and growing odd sizes.
TEST(DataAugment, NearestExactResizeEqualsTorchsInterpolation) {
  const at::Tensor x = at::randn({2, 3, 13, 7, 11});
  const std::vector<std::vector<int64_t>> sizes = {{5, 4, 6}, {7, 3, 11}, {26, 9, 4}, {1, 1, 1}, {13, 7, 11}};
  for (const auto& s : sizes) {
    const at::Tensor ref = at::_upsample_nearest_exact3d(x, s, c10::nullopt, c10::nullopt, c10::nullopt);
    EXPECT_TRUE(resize_nearest_exact(x, s).equal(ref)) << s[0] << "x" << s[1] << "x" << s[2];
    const at::Tensor labels = (x * 10).round().to(at::kShort);
    const at::Tensor lab_ref =
        at::_upsample_nearest_exact3d(labels.to(at::kFloat), s, c10::nullopt, c10::nullopt, c10::nullopt);
    const at::Tensor got = resize_nearest_exact(labels, s);
    EXPECT_EQ(got.scalar_type(), at::kShort);
    EXPECT_TRUE(got.to(at::kFloat).equal(lab_ref)) << s[0] << "x" << s[1] << "x" << s[2];
  }
  // A strided view: read as the values it shows.
  const at::Tensor view = x.transpose(3, 4);
  EXPECT_TRUE(resize_nearest_exact(view, {5, 4, 6})
                  .equal(at::_upsample_nearest_exact3d(view.contiguous(), {5, 4, 6}, c10::nullopt, c10::nullopt,
                                                       c10::nullopt)));
}
