#include "data/augment/draw.h"

#include "data/augment/gaussian_noise.h"
#include "data/augment/intensity.h"
#include "data/augment/mirror.h"

namespace medseg::data::augment {

// The order of the draws is the order of the transforms (augment_intensities used to draw while
// applying; the Rng sequence is unchanged).
IntensityParams draw_intensities(const AugmentConfig& cfg, int64_t C, Rng& rng) {
  IntensityParams p;
  p.noise = rng.bernoulli(cfg.p_noise);
  if (p.noise) p.noise_std = sample_noise_std(cfg, rng);
  if (rng.bernoulli(cfg.p_blur)) p.blur = sample_blur(cfg, C, rng);
  if (rng.bernoulli(cfg.p_brightness)) p.brightness = sample_channel_factors(C, cfg.brightness_lo, cfg.brightness_hi, rng);
  if (rng.bernoulli(cfg.p_contrast)) p.contrast = sample_channel_factors(C, cfg.contrast_lo, cfg.contrast_hi, rng);
  if (rng.bernoulli(cfg.p_lowres)) p.lowres = sample_low_resolution(cfg, C, rng);
  if (rng.bernoulli(cfg.p_gamma_inverted)) p.gamma_inverted = sample_channel_factors(C, cfg.gamma_lo, cfg.gamma_hi, rng);
  if (rng.bernoulli(cfg.p_gamma)) p.gamma = sample_channel_factors(C, cfg.gamma_lo, cfg.gamma_hi, rng);
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
