#pragma once
// Probabilities and ranges of nnU-Net's training augmentation (nnUNetTrainer.get_training_transforms
// with batchgeneratorsv2). Defaults are nnU-Net's; `disabled()` switches every random transform off.
#include <array>
#include <cstdint>
#include <vector>

#include "data/case_source.h"

namespace medseg::data::augment {

// The intensity transforms of nnU-Net's pipeline (after the spatial transform, before mirroring), in its
// order. This list is the one place the order is written: the draws (draw.cpp), the CPU path (pipeline.cpp)
// and the batched device path (device_intensity.cpp) each walk it; their probabilities and ranges are
// AugmentConfig's.
enum class IntensityStep { Noise, Blur, Brightness, Contrast, LowResolution, GammaInverted, Gamma };
inline constexpr std::array<IntensityStep, 7> kIntensityOrder = {
    IntensityStep::Noise,         IntensityStep::Blur,          IntensityStep::Brightness, IntensityStep::Contrast,
    IntensityStep::LowResolution, IntensityStep::GammaInverted, IntensityStep::Gamma};

struct AugmentConfig {
  Shape3 patch{0, 0, 0};  // final patch (z == 1 for 2D configurations)
  bool is_2d = false;     // 2D configuration (pseudo-3D patch with z == 1)
  bool dummy_2d = false;  // 3D patch with max(patch) / patch[0] > 3: spatial transform per z-slice

  // SpatialTransform: angles U(-rotation_max, rotation_max) per axis, one scale for all axes.
  double p_rotation = 0.2, rotation_max = 30.0 / 180.0 * 3.14159265358979323846;
  double p_scaling = 0.2, scale_lo = 0.7, scale_hi = 1.4;
  double p_noise = 0.1, noise_lo = 0.0, noise_hi = 0.1;  // BG2 uses the drawn value as the std
  double p_blur = 0.2, blur_lo = 0.5, blur_hi = 1.0, blur_p_channel = 0.5;
  double p_brightness = 0.15, brightness_lo = 0.75, brightness_hi = 1.25;
  double p_contrast = 0.15, contrast_lo = 0.75, contrast_hi = 1.25;
  double p_lowres = 0.25, lowres_lo = 0.5, lowres_hi = 1.0, lowres_p_channel = 0.5;
  double p_gamma_inverted = 0.1, p_gamma = 0.3, gamma_lo = 0.7, gamma_hi = 1.5;
  std::vector<int> mirror_axes{0, 1, 2};  // spatial axes of (z, y, x); each flipped with p_mirror
  double p_mirror = 0.5;
  std::vector<int> mask_channels;  // channels with use_mask_for_norm: zeroed where seg < 0
  // Cascade stages only (cascade.h): ApplyRandomBinaryOperatorTransform and
  // RemoveRandomConnectedComponentFromOneHotEncodingTransform on the previous stage's channels.
  double p_cascade_morph = 0.4, p_cascade_removal = 0.2;

  // The probability that `step` fires for a sample.
  double probability(IntensityStep step) const {
    switch (step) {
      case IntensityStep::Noise: return p_noise;
      case IntensityStep::Blur: return p_blur;
      case IntensityStep::Brightness: return p_brightness;
      case IntensityStep::Contrast: return p_contrast;
      case IntensityStep::LowResolution: return p_lowres;
      case IntensityStep::GammaInverted: return p_gamma_inverted;
      case IntensityStep::Gamma: return p_gamma;
    }
    return 0;
  }

  // Axes the low-resolution simulation leaves alone: z for dummy-2D and 2D.
  bool lowres_ignores_z() const { return dummy_2d || is_2d; }
  // Rotation and scaling in the (y, x) plane only.
  bool in_plane() const { return dummy_2d || is_2d; }

  AugmentConfig& disabled() {
    p_rotation = p_scaling = p_noise = p_blur = p_brightness = p_contrast = p_lowres = 0;
    p_gamma_inverted = p_gamma = p_mirror = p_cascade_morph = p_cascade_removal = 0;
    return *this;
  }
};

}  // namespace medseg::data::augment
