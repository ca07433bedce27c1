#pragma once
// Spatial parallelism (docs/spatial_parallel.md): the one rule for which axis of a patch is split
// into slabs, shared by the planner's memory model and the trainer. No torch.
#include <vector>

namespace medseg::planning {

// The product of a network's strides per axis (its total downsampling).
std::vector<int> total_strides(const std::vector<std::vector<int>>& strides, int dims);

// The axis whose slabs stay aligned with every strided and transposed convolution: patch[axis] / n
// divisible by the total stride along it. Of those, the longest (ties: the first); -1 when none is.
// n == 1: -1 (nothing to split).
int spatial_shard_axis(const std::vector<int>& patch, const std::vector<std::vector<int>>& strides, int n);

// The patch one rank holds: the axis divided by n.
std::vector<int> slab_patch(std::vector<int> patch, int axis, int n);

}  // namespace medseg::planning
