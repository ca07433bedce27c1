#pragma once
// BG2 SharpeningTransform as DA5 uses it (p 0.2, after mirroring): each channel with p 0.5 and its own
// strength U(0.1, 1): x += strength * laplacian(x), the 3D 6-neighbour Laplacian (centre 6, faces -1)
// with replicate padding. On a 2D patch (z of 1) the replicated z-neighbours equal the centre, so this
// is BG2's 2D 4-neighbour kernel. Torch ops: either device.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "data/augment/config.h"
#include "data/augment/intensity.h"
#include "data/rng.h"

namespace medseg::data::augment {

ChannelValues sample_sharpening(const AugmentConfig& cfg, int64_t channels, Rng& rng);

// data (C, z, y, x), in place.
void apply_sharpening(at::Tensor& data, const ChannelValues& strengths);

}  // namespace medseg::data::augment
