#include "data/augment/draw.h"

#include "data/augment/brightness.h"
#include "data/augment/gaussian_noise.h"
#include "data/augment/intensity.h"
#include "data/augment/mirror.h"
#include "data/augment/sharpen.h"

namespace medseg::data::augment {

namespace {

void draw_step(IntensityStep step, const AugmentConfig& cfg, int64_t C, Rng& rng, IntensityParams& p) {
  // #lizard forgives: one case per IntensityStep (config.h); the switch is the table
  switch (step) {
    case IntensityStep::Noise:
      p.noise = true;
      p.noise_std = sample_noise_std(cfg, rng);
      break;
    case IntensityStep::Blur: p.blur = sample_blur(cfg, C, rng); break;
    case IntensityStep::Smoothing:  // OneOf: median or blur
      if (rng.bernoulli(0.5))
        p.median = sample_median(cfg, C, rng);
      else
        p.blur = sample_blur(cfg, C, rng);
      break;
    case IntensityStep::Brightness:
      p.brightness = sample_channel_factors(C, cfg.brightness_lo, cfg.brightness_hi, rng);
      break;
    case IntensityStep::AdditiveBrightness: p.additive_brightness = sample_additive_brightness(cfg, C, rng); break;
    case IntensityStep::Contrast:
      // No draw when certain (nnU-Net's default keeps its draw sequence).
      if (cfg.p_contrast_preserve_range < 1) p.contrast_preserve_range = rng.bernoulli(cfg.p_contrast_preserve_range);
      p.contrast_channels = chosen_channels(C, cfg.contrast_p_channel, rng);
      p.contrast = sample_channel_factors(static_cast<int64_t>(p.contrast_channels.size()), cfg.contrast_lo,
                                          cfg.contrast_hi, rng);
      break;
    case IntensityStep::LowResolution: p.lowres = sample_low_resolution(cfg, C, rng); break;
    case IntensityStep::GammaInverted:
      p.gamma_inverted = sample_channel_factors(C, cfg.gamma_lo, cfg.gamma_hi, rng);
      break;
    case IntensityStep::Gamma:
      p.gamma = sample_channel_factors(C, cfg.gamma_lo, cfg.gamma_hi, rng);
      p.gamma_invert = cfg.gamma_inverts;
      break;
    case IntensityStep::Mirror: p.mirror_axes = sample_mirror_axes(cfg, rng); break;
    case IntensityStep::BlankRectangles: p.blank_rectangles = sample_blank_rectangles(cfg, C, rng); break;
    case IntensityStep::BrightnessGradient: p.brightness_gradient = sample_local_kernels(cfg, C, false, rng); break;
    case IntensityStep::LocalGamma: p.local_gamma = sample_local_kernels(cfg, C, true, rng); break;
    case IntensityStep::Sharpening: p.sharpening = sample_sharpening(cfg, C, rng); break;
  }
}

}  // namespace

// One draw per step of cfg.order (whether it fires, then its parameters; Mirror always "fires" and
// draws its axes). The steps after Mirror run before the flip (finish.h), on positions reflected here.
IntensityParams draw_intensities(const AugmentConfig& cfg, int64_t C, Rng& rng) {
  IntensityParams p;
  p.order = cfg.order;
  bool mirrored = false;
  for (const IntensityStep step : cfg.order) {
    if (step != IntensityStep::Mirror && !rng.bernoulli(cfg.probability(step))) continue;
    draw_step(step, cfg, C, rng, p);
    mirrored = mirrored || step == IntensityStep::Mirror;
    if (!mirrored) continue;
    if (step == IntensityStep::BlankRectangles) reflect_rectangles(p.blank_rectangles, p.mirror_axes, cfg.patch);
    if (step == IntensityStep::BrightnessGradient) reflect_kernels(p.brightness_gradient, p.mirror_axes, cfg.patch);
    if (step == IntensityStep::LocalGamma) reflect_kernels(p.local_gamma, p.mirror_axes, cfg.patch);
  }
  return p;
}

SampleDraw draw_sample(const AugmentConfig& cfg, int64_t channels, Rng& rng, uint64_t noise_seed) {
  SampleDraw d;
  d.spatial = sample_spatial(cfg, rng);
  d.axes = sample_axis_ops(cfg, rng);
  d.intensity = draw_intensities(cfg, channels, rng);
  d.noise_seed = noise_seed;
  return d;
}

}  // namespace medseg::data::augment
