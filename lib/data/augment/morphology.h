#pragma once
// Binary morphology with a ball (a disk in a one-slice volume) of any radius, for the cascade's
// ApplyRandomBinaryOperatorTransform. batchgeneratorsv2 convolves with skimage's ball(r) and
// thresholds; the same sets come from the exact squared Euclidean distance transform
// (Felzenszwalb & Huttenlocher, separable, linear in the voxels), whatever the radius:
//   dilation: voxels within r of a foreground voxel of the array,
//   erosion:  foreground voxels with no background voxel of the array within r (the convolution's
//             zero padding means the outside never erodes),
//   opening = dilation(erosion), closing = erosion(dilation).
// A radius r keeps the offsets d with |d|^2 <= r^2 (skimage's ball for an integer r; medseg keeps
// the same rule for the fractional radii nnU-Net draws, where skimage's grid turns even-sized).
#include <cstdint>
#include <vector>

#include "core/grid.h"

namespace medseg::data::augment {

enum class BinaryOp { Dilation, Erosion, Closing, Opening };

// Squared distance of every voxel to the nearest voxel with mask != 0 (z, y, x order, unit spacing);
// a huge value when the mask is empty.
std::vector<double> squared_distance_to(const std::vector<uint8_t>& mask, const Shape3& shape);

// `mask` (0/1, z, y, x) with `op` applied, ball radius `radius` (> 0).
std::vector<uint8_t> binary_operation(const std::vector<uint8_t>& mask, const Shape3& shape, BinaryOp op,
                                      double radius);

}  // namespace medseg::data::augment
