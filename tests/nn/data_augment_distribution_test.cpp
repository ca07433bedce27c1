// The augmentation's random decisions against docs/data_pipeline.md's table, over many samples:
// how often each transform fires (binomial bounds), and the range, mean and spread of its
// parameters (uniform and BGContrast moments computed by hand). Decisions come from draw_sample,
// which both the per-sample CPU path and the batched device path use.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "data/augment/draw.h"

using namespace medseg::data;
using namespace medseg::data::augment;

namespace {

constexpr int kN = 6000;
constexpr double kDeg = 3.14159265358979323846 / 180.0;

void expect_rate(int hits, int n, double p, const char* what) {
  const double se = std::sqrt(p * (1 - p) / n);
  EXPECT_NEAR(static_cast<double>(hits) / n, p, 4.5 * se) << what << ": " << hits << " of " << n;
}

// Mean and variance of values that should be U(lo, hi).
void expect_uniform(const std::vector<double>& v, double lo, double hi, const char* what) {
  ASSERT_GT(v.size(), 50u) << what;
  double m = 0, ss = 0;
  for (double x : v) {
    EXPECT_GE(x, lo) << what;
    EXPECT_LE(x, hi) << what;
    m += x;
  }
  m /= static_cast<double>(v.size());
  for (double x : v) ss += (x - m) * (x - m);
  const double var = ss / static_cast<double>(v.size() - 1), want_var = (hi - lo) * (hi - lo) / 12;
  EXPECT_NEAR(m, (lo + hi) / 2, 4.5 * std::sqrt(want_var / static_cast<double>(v.size()))) << what;
  EXPECT_NEAR(var, want_var, 0.15 * want_var) << what;
}

// BGContrast(lo, hi): with p 0.5 U(lo, 1), otherwise U(1, hi).
void expect_bg_contrast(const std::vector<double>& v, double lo, double hi, const char* what) {
  std::vector<double> below, above;
  for (double x : v) (x < 1 ? below : above).push_back(x);
  expect_rate(static_cast<int>(below.size()), static_cast<int>(v.size()), 0.5, what);
  expect_uniform(below, lo, 1, what);
  expect_uniform(above, 1, hi, what);
}

}  // namespace

TEST(AugmentDistributions, EveryTransformFiresAndDrawsAsDocumented) {
  AugmentConfig cfg;
  cfg.patch = {32, 48, 48};
  const int64_t C = 2;
  int rot = 0, scl = 0, noise = 0, bright = 0, contr = 0, ginv = 0, gam = 0;
  int blur_ch = 0, lowres_ch = 0, mirrored[3] = {0, 0, 0};
  std::vector<double> angles, scales, sigmas_noise, sigmas_blur, f_bright, f_contr, zooms, gammas;
  for (int i = 0; i < kN; ++i) {
    Rng rng(static_cast<uint64_t>(i) * 7919 + 1);
    const SampleDraw d = draw_sample(cfg, C, rng, 0);
    if (d.spatial.rotate) {
      ++rot;
      for (double a : d.spatial.angles) angles.push_back(a);
    }
    if (d.spatial.scale) {
      ++scl;
      scales.push_back(d.spatial.scales[0]);
    }
    const IntensityParams& p = d.intensity;
    if (p.noise) {
      ++noise;
      sigmas_noise.push_back(p.noise_std);
    }
    blur_ch += static_cast<int>(p.blur.channels.size());
    for (const auto& s : p.blur.sigmas) sigmas_blur.insert(sigmas_blur.end(), s.begin(), s.end());
    if (!p.brightness.empty()) ++bright;
    f_bright.insert(f_bright.end(), p.brightness.begin(), p.brightness.end());
    if (!p.contrast.empty()) ++contr;
    f_contr.insert(f_contr.end(), p.contrast.begin(), p.contrast.end());
    lowres_ch += static_cast<int>(p.lowres.channels.size());
    for (const auto& z : p.lowres.zooms) {
      EXPECT_EQ(z[0], z[1]);  // one zoom for all axes in 3D
      EXPECT_EQ(z[1], z[2]);
      zooms.push_back(z[0]);
    }
    if (!p.gamma_inverted.empty()) ++ginv;
    if (!p.gamma.empty()) ++gam;
    gammas.insert(gammas.end(), p.gamma_inverted.begin(), p.gamma_inverted.end());
    gammas.insert(gammas.end(), p.gamma.begin(), p.gamma.end());
    for (int64_t a : p.mirror_axes) ++mirrored[a];
  }
  expect_rate(rot, kN, 0.2, "rotation");
  expect_rate(scl, kN, 0.2, "scaling");
  expect_uniform(angles, -30 * kDeg, 30 * kDeg, "rotation angles");
  expect_uniform(scales, 0.7, 1.4, "scale factor");
  expect_rate(noise, kN, 0.1, "noise");
  expect_uniform(sigmas_noise, 0.0, 0.1, "noise sigma");
  // Blur fires with p 0.2, then each channel with p 0.5: channels per sample 0.2 * 0.5 * C.
  expect_rate(blur_ch, kN * static_cast<int>(C), 0.2 * 0.5, "blurred channels");
  expect_uniform(sigmas_blur, 0.5, 1.0, "blur sigma");
  expect_rate(bright, kN, 0.15, "brightness");
  expect_bg_contrast(f_bright, 0.75, 1.25, "brightness factor");
  expect_rate(contr, kN, 0.15, "contrast");
  expect_bg_contrast(f_contr, 0.75, 1.25, "contrast factor");
  expect_rate(lowres_ch, kN * static_cast<int>(C), 0.25 * 0.5, "low-resolution channels");
  expect_uniform(zooms, 0.5, 1.0, "low-resolution zoom");
  expect_rate(ginv, kN, 0.1, "inverted gamma");
  expect_rate(gam, kN, 0.3, "gamma");
  expect_bg_contrast(gammas, 0.7, 1.5, "gamma");
  for (int a = 0; a < 3; ++a) expect_rate(mirrored[a], kN, 0.5, "mirror axis");
}

TEST(AugmentDistributions, InPlaneConfigurationsRotateInPlaneAndKeepZ) {
  AugmentConfig cfg;
  cfg.patch = {8, 64, 64};
  cfg.dummy_2d = true;
  cfg.rotation_max = 180 * kDeg;
  cfg.lowres_p_channel = 1.0;
  std::vector<double> angles;
  for (int i = 0; i < kN; ++i) {
    Rng rng(static_cast<uint64_t>(i) + 99);
    const SampleDraw d = draw_sample(cfg, 1, rng, 0);
    if (d.spatial.rotate) {
      angles.push_back(d.spatial.angles[0]);
      EXPECT_EQ(d.spatial.angles[1], 0.0);
      EXPECT_EQ(d.spatial.angles[2], 0.0);
    }
    for (const auto& z : d.intensity.lowres.zooms) EXPECT_EQ(z[0], 1.0);  // z untouched
  }
  expect_uniform(angles, -180 * kDeg, 180 * kDeg, "in-plane angle");
}
