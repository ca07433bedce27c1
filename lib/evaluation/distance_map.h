#pragma once
// Euclidean distance transforms on ITK (for surface distances such as HD95).
#include <array>
#include <cstdint>
#include <vector>

namespace medseg::evaluation {

// For every voxel, the distance in mm (spacing in array order z,y,x) to the nearest voxel where
// mask != 0. Throws Error when the mask is empty or the build has no ITK.
std::vector<float> distance_to_mask(const std::vector<uint8_t>& mask, const std::array<int64_t, 3>& shape_zyx,
                                    const std::array<double, 3>& spacing_zyx);

}  // namespace medseg::evaluation
