#pragma once
// Region-based training (nnU-Net's ConvertSegmentationToRegionsTransform): the label map becomes
// one binary channel per region (a region is a set of label values; BraTS' "tumour core" is
// {2, 3}), so overlapping structures are learned with one sigmoid each. With an ignore label a last
// channel marks the unannotated voxels, which the loss and the pseudo Dice leave out.
//
// Applied to every deep-supervision target after nearest-exact downsampling: picking voxels and
// testing membership commute, so this equals nnU-Net's order (regions first, then downsampling).
#include <ATen/core/Tensor.h>

#include <vector>

namespace medseg::data {

// labels: (B, 1, *spatial), integer (or integral float) label values, with -1 on ignored voxels. Returns float (B, R
// [+1], *spatial): channel r is 1 where the label is in regions[r]; with `ignore_channel`, channel R is 1 where the
// label is -1 (no region holds -1).
at::Tensor region_targets(const at::Tensor& labels, const std::vector<std::vector<int>>& regions, bool ignore_channel);

}  // namespace medseg::data
