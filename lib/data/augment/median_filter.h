#pragma once
// BG2 MedianFilterTransform as DA5 uses it (inside its smoothing OneOf): a size per channel uniform in
// 2..7, each channel with p 0.5. scipy.ndimage.median_filter's semantics: a cubic window of `size`
// whose centre is element size // 2 (even sizes reach one further back than forward), 'reflect'
// borders (d c b a | a b c d) and, for an even number of elements, the upper median (rank n // 2).
// An axis of length 1 gets a window of 1: the same values scipy gives (each value repeated `size`
// times leaves the rank's value unchanged). Torch ops: either device.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "data/augment/config.h"
#include "data/augment/intensity.h"
#include "data/rng.h"

namespace medseg::data::augment {

using MedianParams = ChannelValues;  // values: the window size of each chosen channel

MedianParams sample_median(const AugmentConfig& cfg, int64_t channels, Rng& rng);

// data (C, z, y, x) float32, in place.
void apply_median(at::Tensor& data, const MedianParams& p);

// One channel (z, y, x) filtered with a cubic window of `size`; a new tensor.
at::Tensor median_filter(const at::Tensor& volume, int64_t size);

}  // namespace medseg::data::augment
