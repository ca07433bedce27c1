#include "data/augment/pipeline.h"

#include <ATen/ATen.h>

#include "data/augment/axis_ops.h"
#include "data/augment/blank_rectangle.h"
#include "data/augment/brightness.h"
#include "data/augment/contrast.h"
#include "data/augment/finish.h"
#include "data/augment/gamma.h"
#include "data/augment/gaussian_blur.h"
#include "data/augment/gaussian_noise.h"
#include "data/augment/local_gaussian.h"
#include "data/augment/low_resolution.h"
#include "data/augment/median_filter.h"
#include "data/augment/sharpen.h"
#include "data/augment/spatial.h"

namespace medseg::data::augment {

Sample augment_training_sample(const Sample& loader_patch, const AugmentConfig& cfg, Rng& rng, at::Generator& gen) {
  // apply_spatial on a whole loader patch never aliases it.
  Sample s = apply_spatial(loader_patch, cfg.patch, sample_spatial(cfg, rng), cfg.in_plane());
  const AxisOps ops = sample_axis_ops(cfg, rng);
  s = {apply_axis_ops(s.data, ops), apply_axis_ops(s.seg, ops)};
  const std::vector<int64_t> axes = augment_intensities(s, cfg, rng, gen);
  Sample out{at::empty_like(s.data), at::empty_like(s.seg)};
  finish_sample(s, axes, cfg.mask_channels, out.data.data_ptr<float>(), out.seg.data_ptr<int16_t>());
  return out;
}

std::vector<int64_t> augment_intensities(Sample& s, const AugmentConfig& cfg, Rng& rng, at::Generator& gen) {
  const IntensityParams p = draw_intensities(cfg, s.data.size(0), rng);
  apply_intensities(s, p, gen);
  return p.mirror_axes;
}

void apply_intensities(Sample& s, const IntensityParams& p, at::Generator& gen) {
  // #lizard forgives: one case per IntensityStep (config.h); the switch is the table
  if (!s.data.is_contiguous()) s.data = s.data.contiguous();
  for (const IntensityStep step : p.order) {
    switch (step) {
      case IntensityStep::Noise:
        if (p.noise) add_gaussian_noise(s.data, p.noise_std, gen);
        break;
      case IntensityStep::Blur: apply_blur(s.data, p.blur); break;
      case IntensityStep::Smoothing:
        apply_median(s.data, p.median);
        apply_blur(s.data, p.blur);
        break;
      case IntensityStep::Brightness:
        if (!p.brightness.empty()) apply_brightness(s.data, p.brightness);
        break;
      case IntensityStep::AdditiveBrightness: apply_additive_brightness(s.data, p.additive_brightness); break;
      case IntensityStep::Contrast:
        if (!p.contrast.empty()) apply_contrast(s.data, p.contrast_channels, p.contrast, p.contrast_preserve_range);
        break;
      case IntensityStep::LowResolution: apply_low_resolution(s.data, p.lowres); break;
      case IntensityStep::GammaInverted:
        if (!p.gamma_inverted.empty()) apply_gamma(s.data, p.gamma_inverted, true);
        break;
      case IntensityStep::Gamma:
        if (!p.gamma.empty()) apply_gamma(s.data, p.gamma, p.gamma_invert);
        break;
      case IntensityStep::Mirror: break;  // the flip is finish_sample's (finish.h)
      case IntensityStep::BlankRectangles: apply_blank_rectangles(s.data, p.blank_rectangles); break;
      case IntensityStep::BrightnessGradient: apply_brightness_gradient(s.data, p.brightness_gradient); break;
      case IntensityStep::LocalGamma: apply_local_gamma(s.data, p.local_gamma); break;
      case IntensityStep::Sharpening: apply_sharpening(s.data, p.sharpening); break;
    }
  }
}

}  // namespace medseg::data::augment
