#pragma once
// Connected components of a binary mask, as scikit-image's `label` counts them for nnU-Net's
// postprocessing (acvl_utils' remove_all_but_largest_component): full connectivity, i.e. the 26
// neighbours of a voxel in 3D (8 in a one-slice 2D volume).
#include <array>
#include <cstdint>
#include <vector>

namespace medseg::postprocessing {

// Components of `mask` (z, y, x order, nonzero = inside), numbered 1, 2, ... in the raster order
// of their first voxel; 0 outside. `sizes[k]` is the voxel count of component k (sizes[0] = 0).
struct Components {
  std::vector<int32_t> label;
  std::vector<int64_t> sizes;
};
Components connected_components(const std::vector<uint8_t>& mask, const std::array<int64_t, 3>& shape);

// The mask with every component but the largest removed (ties: the first in raster order).
std::vector<uint8_t> largest_component(const std::vector<uint8_t>& mask, const std::array<int64_t, 3>& shape);

}  // namespace medseg::postprocessing
