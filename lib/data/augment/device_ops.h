#pragma once
// The steps of augment_on_device (device_augment.h), internal to it; torch ops on whatever device
// the tensors live on.
#include <ATen/core/Tensor.h>

#include <vector>

#include "data/augment/config.h"
#include "data/augment/draw.h"
#include "data/augment/sample.h"

namespace medseg::data::augment::device {

// One sample's spatial transform from its loader patch (data (C, L), seg (1, L)) to the final
// patch: the same plan and arithmetic as apply_spatial (resample.h), with grid_sample.
Sample spatial(const at::Tensor& data, const at::Tensor& seg, const SpatialParams& p, const AugmentConfig& cfg);

// Noise ... gamma on the batch x (B, C, z, y, x), in place, sample b with draws[b].
void intensities(at::Tensor& x, const std::vector<SampleDraw>& draws);

}  // namespace medseg::data::augment::device
