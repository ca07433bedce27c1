#pragma once
// nnU-Net 2.8.1's resample_torch_fornnunet (preprocessing/resampling/resample_torch.py), the resampling of
// its *_torchres planners, without linking torch: torch.nn.functional.interpolate's CPU arithmetic
// (align_corners=False, antialias=False, float32) written out, and checked value for value against torch's
// own upsample ops (tests/nn/resampling_torch_test.cpp).
//  * data: trilinear over the three axes. With separate z: bilinear over the two other axes of each
//    slice across the separate axis, then nearest-exact along it;
//  * segmentation: each label value present (ascending, -1 included) as a mask of 0/1000, interpolated as
//    the data is and rounded to fp16; where it exceeds 700 the voxel takes the label (later labels win);
//    voxels no mask claims take the label of the largest fp16 value (the first on ties, as torch's argmax).
//    With memefficient_seg_resampling: the float mask > 0.5 takes the label, 0 where none does;
//  * nothing happens when the shape does not change.
// Shapes are in array order; the separate-z decision is decide_separate_z's (resampling.h).
#include <cstdint>
#include <vector>

#include "preprocessing/resampling.h"

namespace medseg::preprocessing {

// `data` holds `channels` arrays of shape `in`; returns `channels` arrays of shape `out`.
std::vector<float> resample_data_torch(const std::vector<float>& data, int channels, const Shape3& in,
                                       const Shape3& out, const SeparateZ& sep);

// One label map of shape `in` -> `out`.
std::vector<int16_t> resample_seg_torch(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                        const SeparateZ& sep, bool memefficient = false);

}  // namespace medseg::preprocessing
