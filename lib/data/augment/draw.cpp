#include "data/augment/draw.h"

#include "data/augment/gaussian_noise.h"
#include "data/augment/intensity.h"
#include "data/augment/mirror.h"

namespace medseg::data::augment {

// One draw per step of kIntensityOrder (whether it fires, then its parameters), then the mirror axes.
IntensityParams draw_intensities(const AugmentConfig& cfg, int64_t C, Rng& rng) {
  IntensityParams p;
  for (const IntensityStep step : kIntensityOrder) {
    if (!rng.bernoulli(cfg.probability(step))) continue;
    switch (step) {
      case IntensityStep::Noise:
        p.noise = true;
        p.noise_std = sample_noise_std(cfg, rng);
        break;
      case IntensityStep::Blur: p.blur = sample_blur(cfg, C, rng); break;
      case IntensityStep::Brightness:
        p.brightness = sample_channel_factors(C, cfg.brightness_lo, cfg.brightness_hi, rng);
        break;
      case IntensityStep::Contrast:
        p.contrast = sample_channel_factors(C, cfg.contrast_lo, cfg.contrast_hi, rng);
        break;
      case IntensityStep::LowResolution: p.lowres = sample_low_resolution(cfg, C, rng); break;
      case IntensityStep::GammaInverted:
        p.gamma_inverted = sample_channel_factors(C, cfg.gamma_lo, cfg.gamma_hi, rng);
        break;
      case IntensityStep::Gamma: p.gamma = sample_channel_factors(C, cfg.gamma_lo, cfg.gamma_hi, rng); break;
    }
  }
  p.mirror_axes = sample_mirror_axes(cfg, rng);
  return p;
}

SampleDraw draw_sample(const AugmentConfig& cfg, int64_t channels, Rng& rng, uint64_t noise_seed) {
  SampleDraw d;
  d.spatial = sample_spatial(cfg, rng);
  d.intensity = draw_intensities(cfg, channels, rng);
  d.noise_seed = noise_seed;
  return d;
}

}  // namespace medseg::data::augment
