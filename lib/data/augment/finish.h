#pragma once
// The last per-sample steps of nnU-Net's pipelines in one pass per array, written straight into
// the sample's slot of the batch: MirrorTransform (the drawn axes flipped), MaskImageTransform
// (`mask_channels`, the use_mask_for_norm ones, set to 0 wherever seg < 0) and
// RemoveLabelTransform (-1 -> 0). Validation uses it with no axes and no masked channels.
#include <cstdint>
#include <vector>

#include "data/augment/sample.h"

namespace medseg::data::augment {

// `s`: data (C, z, y, x) float32, seg (1, z, y, x) int16. `data_out` / `seg_out`: C * z * y * x and
// z * y * x values, contiguous, not overlapping `s`.
void finish_sample(const Sample& s, const std::vector<int64_t>& mirror_axes, const std::vector<int>& mask_channels,
                   float* data_out, int16_t* seg_out);

}  // namespace medseg::data::augment
