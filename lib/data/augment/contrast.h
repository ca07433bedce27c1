#pragma once
// BG2 ContrastTransform (nnU-Net: p 0.15, BGContrast(0.75, 1.25) per channel, preserve_range; DA5:
// p 0.2, BGContrast(0.5, 2), each channel with p 0.5, preserve_range or not 50 / 50):
// x = (x - mean) * f + mean, then (preserve_range) clamped to the channel's [min, max] before the change.
#include <ATen/core/Tensor.h>

#include <vector>

namespace medseg::data::augment {

// factors[i] for channel channels[i].
void apply_contrast(at::Tensor& data, const std::vector<int64_t>& channels, const std::vector<double>& factors,
                    bool preserve_range = true);

}  // namespace medseg::data::augment
