#pragma once
// nnUNetTrainerDA5's Rot90Transform and TransposeAxesTransform (each with p 0.5, after the spatial
// transform): both act on the patch axes that share the most frequent length (nnU-Net's
// `matching_axes`), and only when at least two axes do, so the patch keeps its shape.
//  * Rot90: one pair of those axes (sorted), rotated k * 90 degrees, k uniform in 0..3 (torch.rot90).
//  * Transpose: those axes shuffled among themselves (torch.permute).
// Image and labels alike. A 2D configuration's patch axes are (y, x) only.
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

#include "data/augment/config.h"
#include "data/rng.h"

namespace medseg::data::augment {

struct AxisOps {
  int64_t rot_k = 0;                      // quarter turns; 0: no rotation
  std::array<int64_t, 2> rot_axes{1, 2};  // spatial axes (0..2) of the rotation
  std::vector<int64_t> order;             // permutation of the spatial axes 0..2; empty: none
  bool active() const { return rot_k != 0 || !order.empty(); }
};

// The axes Rot90 and Transpose may touch: the most frequent length's axes of `patch` (z, y, x; y and x
// only for 2D), or none when every length is different.
std::vector<int64_t> equal_length_axes(const Shape3& patch, bool is_2d);

AxisOps sample_axis_ops(const AugmentConfig& cfg, Rng& rng);

// (C, z, y, x) -> the same shape; a new contiguous tensor when `ops` is active, else `t`.
at::Tensor apply_axis_ops(const at::Tensor& t, const AxisOps& ops);

}  // namespace medseg::data::augment
