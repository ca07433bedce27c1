#pragma once
// Every random decision of one training sample's augmentation, drawn up front in the pipeline's
// order (spatial; Rot90 / Transpose; the steps of AugmentConfig::order, config.h) from the sample's Rng. The CPU
// path (pipeline.h) applies the record as it goes; the batched device path (device_augment.h) gets the record from the
// loader workers and applies it on the collated batch. Both draw through these functions, so the two paths consume the
// Rng identically.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "data/augment/axis_ops.h"
#include "data/augment/blank_rectangle.h"
#include "data/augment/config.h"
#include "data/augment/gaussian_blur.h"
#include "data/augment/intensity.h"
#include "data/augment/local_gaussian.h"
#include "data/augment/low_resolution.h"
#include "data/augment/median_filter.h"
#include "data/augment/spatial.h"
#include "data/rng.h"

namespace medseg::data::augment {

// The steps of `order`: an empty list means the transform did not fire. Positions of the steps after
// Mirror are already reflected along mirror_axes (config.h).
struct IntensityParams {
  std::vector<IntensityStep> order;  // the config's, so a record applies without it
  bool noise = false;
  double noise_std = 0;
  MedianParams median;                     // Smoothing's median (no channels: none)
  BlurParams blur;                         // Blur, or Smoothing's blur (no channels: no blur)
  std::vector<double> brightness;          // per channel
  ChannelValues additive_brightness;       // shift per chosen channel
  std::vector<int64_t> contrast_channels;  // with contrast[i] for each
  std::vector<double> contrast;
  bool contrast_preserve_range = true;
  LowResParams lowres;                        // no channels: nothing simulated
  std::vector<double> gamma_inverted, gamma;  // per channel
  bool gamma_invert = false;                  // the Gamma step inverts (DA5)
  std::vector<int64_t> mirror_axes;           // spatial axes 0..2
  std::vector<BlankRect> blank_rectangles;
  std::vector<LocalKernel> brightness_gradient, local_gamma;
  ChannelValues sharpening;  // strength per chosen channel
};

IntensityParams draw_intensities(const AugmentConfig& cfg, int64_t channels, Rng& rng);

// One sample's whole record. `noise_seed` seeds the generator of the noise voxels (the CPU path's
// per-sample generator uses the same seed).
struct SampleDraw {
  SpatialParams spatial;
  AxisOps axes;
  IntensityParams intensity;
  uint64_t noise_seed = 0;
};

SampleDraw draw_sample(const AugmentConfig& cfg, int64_t channels, Rng& rng, uint64_t noise_seed);

// What the loader workers hand to the device path: the un-augmented loader patches of a batch
// (fixed size, unlike the CPU path's planned read box) and each sample's record.
struct DeviceBatchInput {
  at::Tensor data;                // (n, C, loader z, y, x) float32; 0 outside the case
  at::Tensor seg;                 // (n, 1, loader z, y, x) int16; -1 outside the case
  std::vector<SampleDraw> draws;  // per sample of the share
};

}  // namespace medseg::data::augment
