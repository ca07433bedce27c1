#pragma once
// The layers of a spatially sharded U-Net forward (docs/spatial_parallel.md): each rank runs the
// network on its slab of the patch along one axis; convolutions fetch their halo from the
// neighbouring slabs, instance norm reduces its statistics over all slabs. Every other layer of the
// U-Nets (1x1 convs, transposed convs and average pools with kernel == stride, LeakyReLU, dropout)
// is local as long as each slab stays aligned with every stride (check_shardable_patch).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "distributed/halo.h"
#include "models/layers.h"

namespace medseg::models {

// Halo planes a conv with kernel k, stride s and padding p needs along the shard axis, for a slab
// whose length is divisible by s: p on the left, max(0, k - p - s) on the right. Then the padded
// slab of length L yields exactly L / s outputs, the ones the unsharded conv computes there.
struct HaloWidth {
  int64_t left = 0, right = 0;
};
HaloWidth conv_halo(int64_t kernel, int64_t stride, int64_t padding);

// Conv (dilation 1, groups 1, zero padding `padding` per spatial axis) of the local slab `x`: the
// halo replaces the padding along the shard axis. One autograd function: it keeps the slab and the
// halo planes (not a padded copy of the slab) for backward, so a sharded conv holds no more
// activation memory per voxel than the unsharded one. 3D convs take oneDNN where OneDnnConv3d would.
at::Tensor sharded_conv(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const Shape& stride,
                        const Shape& padding, const distributed::SpatialShard& shard);

// InstanceNormImpl's arithmetic with statistics over the whole volume: per (batch, channel) the mean
// from all-reduced sums, then the biased variance from all-reduced squared deviations (two passes, as
// batch norm). Backward all-reduces the two sums batch norm's gradient needs. Parameter gradients are
// this slab's share (see docs/spatial_parallel.md for why averaging them over ranks is exact).
at::Tensor sharded_instance_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                                 const distributed::SpatialShard& shard);

// Per axis, the product of all stage strides (the U-Net's total downsampling).
Shape total_strides(const std::vector<Shape>& strides, int dims);

// Throws medseg::Error unless `patch` (spatial extents) splits into `count` equal slabs along
// `axis` whose length is divisible by the product of the strides along that axis, so that every
// strided conv, pool and transposed conv stays slab-aligned.
void check_shardable_patch(const std::vector<Shape>& strides, int dims, const Shape& patch, int axis, int count);

}  // namespace medseg::models
