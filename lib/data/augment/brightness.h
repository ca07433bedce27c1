#pragma once
// BG2 MultiplicativeBrightnessTransform (nnU-Net: p 0.15, BGContrast(0.75, 1.25) per channel):
// x_c *= f_c. And BG2 BrightnessAdditiveTransform (DA5: p 0.1, each channel with p 0.5, its own
// shift N(0, 0.5)): x_c += shift_c.
#include <ATen/core/Tensor.h>

#include <vector>

#include "data/augment/config.h"
#include "data/augment/intensity.h"
#include "data/rng.h"

namespace medseg::data::augment {

void apply_brightness(at::Tensor& data, const std::vector<double>& factors);

ChannelValues sample_additive_brightness(const AugmentConfig& cfg, int64_t channels, Rng& rng);
void apply_additive_brightness(at::Tensor& data, const ChannelValues& shifts);

}  // namespace medseg::data::augment
