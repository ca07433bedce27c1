#include "data/augment/pipeline.h"

#include <ATen/ATen.h>

#include "data/augment/brightness.h"
#include "data/augment/contrast.h"
#include "data/augment/finish.h"
#include "data/augment/gamma.h"
#include "data/augment/gaussian_blur.h"
#include "data/augment/gaussian_noise.h"
#include "data/augment/intensity.h"
#include "data/augment/low_resolution.h"
#include "data/augment/mirror.h"
#include "data/augment/spatial.h"

namespace medseg::data::augment {

Sample augment_training_sample(const Sample& loader_patch, const AugmentConfig& cfg, Rng& rng, at::Generator& gen) {
  // apply_spatial on a whole loader patch never aliases it.
  Sample s = apply_spatial(loader_patch, cfg.patch, sample_spatial(cfg, rng), cfg.in_plane());
  const std::vector<int64_t> axes = augment_intensities(s, cfg, rng, gen);
  Sample out{at::empty_like(s.data), at::empty_like(s.seg)};
  finish_sample(s, axes, cfg.mask_channels, out.data.data_ptr<float>(), out.seg.data_ptr<int16_t>());
  return out;
}

std::vector<int64_t> augment_intensities(Sample& s, const AugmentConfig& cfg, Rng& rng, at::Generator& gen) {
  if (!s.data.is_contiguous()) s.data = s.data.contiguous();
  const int64_t C = s.data.size(0);
  if (rng.bernoulli(cfg.p_noise)) add_gaussian_noise(s.data, sample_noise_std(cfg, rng), gen);
  if (rng.bernoulli(cfg.p_blur)) apply_blur(s.data, sample_blur(cfg, C, rng));
  if (rng.bernoulli(cfg.p_brightness))
    apply_brightness(s.data, sample_channel_factors(C, cfg.brightness_lo, cfg.brightness_hi, rng));
  if (rng.bernoulli(cfg.p_contrast))
    apply_contrast(s.data, sample_channel_factors(C, cfg.contrast_lo, cfg.contrast_hi, rng));
  if (rng.bernoulli(cfg.p_lowres)) apply_low_resolution(s.data, sample_low_resolution(cfg, C, rng));
  if (rng.bernoulli(cfg.p_gamma_inverted))
    apply_gamma(s.data, sample_channel_factors(C, cfg.gamma_lo, cfg.gamma_hi, rng), true);
  if (rng.bernoulli(cfg.p_gamma))
    apply_gamma(s.data, sample_channel_factors(C, cfg.gamma_lo, cfg.gamma_hi, rng), false);
  return sample_mirror_axes(cfg, rng);
}

}  // namespace medseg::data::augment
