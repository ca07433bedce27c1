#pragma once
// Probabilities and ranges of nnU-Net's training augmentation (nnUNetTrainer.get_training_transforms
// with batchgeneratorsv2). Defaults are nnU-Net's; `disabled()` switches every random transform off.
#include <array>
#include <cstdint>
#include <vector>

#include "data/case_source.h"

namespace medseg::data::augment {

// Where training augmentation runs: per sample in the loader workers (Cpu, nnU-Net's way), on the collated batch on
// the training GPU (Cuda; device_augment.h), or that batched path on CPU tensors (CpuBatched: CI and tests).
enum class AugmentDevice { Cpu, CpuBatched, Cuda };

// The per-sample transforms between the spatial transform (with Rot90 / TransposeAxes, axis_ops.h) and
// image masking, as named steps. An order is a list of them: kIntensityOrder is nnU-Net's default pipeline
// (nnUNetTrainer.get_training_transforms), kDA5Order nnUNetTrainerDA5's. The draws (draw.cpp), the CPU path
// (pipeline.cpp) and the batched device path (device_intensity.cpp) each walk AugmentConfig::order; probabilities
// and ranges are AugmentConfig's. Mirror is where the mirror axes are drawn; the flip itself happens in
// finish_sample, after every step: the steps DA5 runs after mirroring have their positions reflected instead
// (draw.cpp), which gives the same image, since their kernels are symmetric.
enum class IntensityStep {
  Noise,               // GaussianNoiseTransform
  Blur,                // GaussianBlurTransform (default pipeline: sigma per axis)
  Smoothing,           // DA5: OneOf(MedianFilterTransform, GaussianBlurTransform with one sigma for all axes)
  Brightness,          // MultiplicativeBrightnessTransform
  AdditiveBrightness,  // BrightnessAdditiveTransform
  Contrast,            // ContrastTransform (DA5: preserve_range or not, 50 / 50)
  LowResolution,       // SimulateLowResolutionTransform
  GammaInverted,       // GammaTransform, p_invert_image 1
  Gamma,               // GammaTransform, p_invert_image 0 (DA5: 1, cfg.gamma_inverts)
  Mirror,              // MirrorTransform: the axes are drawn here
  BlankRectangles,     // BlankRectangleTransform, the rectangle's mean as its value
  BrightnessGradient,  // BrightnessGradientAdditiveTransform
  LocalGamma,          // LocalGammaTransform
  Sharpening,          // SharpeningTransform
};
inline constexpr std::array<IntensityStep, 8> kIntensityOrder = {
    IntensityStep::Noise,         IntensityStep::Blur,          IntensityStep::Brightness, IntensityStep::Contrast,
    IntensityStep::LowResolution, IntensityStep::GammaInverted, IntensityStep::Gamma,      IntensityStep::Mirror};
inline constexpr std::array<IntensityStep, 12> kDA5Order = {IntensityStep::Smoothing,
                                                            IntensityStep::Noise,
                                                            IntensityStep::AdditiveBrightness,
                                                            IntensityStep::Contrast,
                                                            IntensityStep::LowResolution,
                                                            IntensityStep::GammaInverted,
                                                            IntensityStep::Gamma,
                                                            IntensityStep::Mirror,
                                                            IntensityStep::BlankRectangles,
                                                            IntensityStep::BrightnessGradient,
                                                            IntensityStep::LocalGamma,
                                                            IntensityStep::Sharpening};

struct AugmentConfig {
  Shape3 patch{0, 0, 0};  // final patch (z == 1 for 2D configurations)
  bool is_2d = false;     // 2D configuration (pseudo-3D patch with z == 1)
  bool dummy_2d = false;  // 3D patch with max(patch) / patch[0] > 3: spatial transform per z-slice

  // The steps after the spatial transform, in order.
  std::vector<IntensityStep> order{kIntensityOrder.begin(), kIntensityOrder.end()};

  // SpatialTransform: angles U(-rotation_max, rotation_max) per axis, each kept with p_rot_per_axis
  // (else 0); scale factors U(scale_lo, scale_hi), one for all axes with p_sync_scaling, else one per
  // axis. Image and segmentation linear (BG2's one-hot vote for labels) or nearest (the *Ord0 trainers).
  double p_rotation = 0.2, rotation_max = 30.0 / 180.0 * 3.14159265358979323846, p_rot_per_axis = 1.0;
  double p_scaling = 0.2, scale_lo = 0.7, scale_hi = 1.4, p_sync_scaling = 1.0;
  bool nearest_image = false, nearest_seg = false;
  // DA5's Rot90Transform (k in 0..3 about two of the patch's equal-length axes) and
  // TransposeAxesTransform (a shuffle of them); axis_ops.h.
  double p_rot90 = 0.0, p_transpose = 0.0;
  double p_noise = 0.1, noise_lo = 0.0, noise_hi = 0.1;  // BG2 uses the drawn value as the std
  double p_blur = 0.2, blur_lo = 0.5, blur_hi = 1.0, blur_p_channel = 0.5;
  bool blur_sync_axes = false;  // one sigma for all axes (DA5's blur)
  // DA5's smoothing: with p_smoothing a median filter (size median_lo..median_hi per channel) or the
  // blur above, 50 / 50; each channel with median_p_channel / blur_p_channel.
  double p_smoothing = 0.0;
  int64_t median_lo = 2, median_hi = 7;
  double median_p_channel = 0.5;
  double p_brightness = 0.15, brightness_lo = 0.75, brightness_hi = 1.25;
  double p_additive_brightness = 0.0, additive_mu = 0.0, additive_sigma = 0.5, additive_p_channel = 0.5;
  double p_contrast = 0.15, contrast_lo = 0.75, contrast_hi = 1.25, contrast_p_channel = 1.0;
  double p_contrast_preserve_range = 1.0;  // DA5: 0.5 (OneOf of the two ContrastTransforms)
  double p_lowres = 0.25, lowres_lo = 0.5, lowres_hi = 1.0, lowres_p_channel = 0.5;
  double p_gamma_inverted = 0.1, p_gamma = 0.3, gamma_lo = 0.7, gamma_hi = 1.5;
  bool gamma_inverts = false;  // the Gamma step inverts too (DA5's two inverted GammaTransforms)
  // DA5's local transforms after mirroring (blank_rectangle.h, local_gaussian.h, sharpen.h).
  double p_blank = 0.0, blank_p_channel = 0.5;
  int64_t blank_min_count = 1, blank_max_count = 4;
  double p_gradient = 0.0, gradient_p_channel = 0.5;
  double p_local_gamma = 0.0, local_gamma_p_channel = 0.5;
  double p_sharpen = 0.0, sharpen_lo = 0.1, sharpen_hi = 1.0, sharpen_p_channel = 0.5;
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
      case IntensityStep::Mirror: return 1;  // per axis: p_mirror
      case IntensityStep::Smoothing: return p_smoothing;
      case IntensityStep::AdditiveBrightness: return p_additive_brightness;
      case IntensityStep::BlankRectangles: return p_blank;
      case IntensityStep::BrightnessGradient: return p_gradient;
      case IntensityStep::LocalGamma: return p_local_gamma;
      case IntensityStep::Sharpening: return p_sharpen;
    }
    return 0;
  }

  // nnUNetTrainerDA5's pipeline (the spatial ranges it shares with nnU-Net's are left as they are).
  AugmentConfig& da5() {
    order.assign(kDA5Order.begin(), kDA5Order.end());
    p_rotation = 0.4;
    p_rot_per_axis = 0.5;
    scale_lo = 0.7;
    scale_hi = 1.43;
    p_sync_scaling = 0.0;
    p_rot90 = p_transpose = 0.5;
    p_smoothing = 0.2;
    blur_lo = 0.3;
    blur_hi = 1.5;
    blur_sync_axes = true;
    p_additive_brightness = 0.1;
    p_contrast = 0.2;
    contrast_lo = 0.5;
    contrast_hi = 2.0;
    contrast_p_channel = 0.5;
    p_contrast_preserve_range = 0.5;
    p_lowres = 0.15;
    lowres_lo = 0.25;
    p_gamma_inverted = p_gamma = 0.1;
    gamma_inverts = true;
    p_blank = 0.4;
    p_gradient = p_local_gamma = 0.3;
    p_sharpen = 0.2;
    return *this;
  }

  // Axes the low-resolution simulation leaves alone: z for dummy-2D and 2D.
  bool lowres_ignores_z() const { return dummy_2d || is_2d; }
  // Rotation and scaling in the (y, x) plane only.
  bool in_plane() const { return dummy_2d || is_2d; }

  AugmentConfig& disabled() {
    p_rotation = p_scaling = p_noise = p_blur = p_brightness = p_contrast = p_lowres = 0;
    p_gamma_inverted = p_gamma = p_mirror = p_cascade_morph = p_cascade_removal = 0;
    p_rot90 = p_transpose = p_smoothing = p_additive_brightness = p_blank = p_gradient = p_local_gamma = p_sharpen = 0;
    return *this;
  }
};

}  // namespace medseg::data::augment
