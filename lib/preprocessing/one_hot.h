#pragma once
// nnU-Net's convert_labelmap_to_one_hot: a label map as one float channel per listed label (1 where
// the voxel holds it). Values not listed (background, -1 outside the nonzero mask) are 0 in every
// channel. A cascade's previous-stage segmentation reaches the network this way.
#include <cstdint>
#include <vector>

namespace medseg::preprocessing {

// `seg`: n values; `out`: labels.size() * n floats, channel after channel.
void one_hot(const int16_t* seg, int64_t n, const std::vector<int>& labels, float* out);

}  // namespace medseg::preprocessing
