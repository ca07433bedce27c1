#pragma once
// The arithmetic of one forward pass of a U-Net plan, so that a measured time becomes a rate (GFLOP/s)
// that can be set against the processor's peak (scripts/bench/bench_predict.sh).
#include <cstdint>
#include <vector>

#include "plans/plans.h"

namespace medseg::planning {

// Multiply-accumulates of one forward pass of one sample of `patch`, as in prediction (deep supervision
// off: the last segmentation head only): every convolution, transposed convolution and 1x1 head of
// PlainConvUNet / ResidualEncoderUNet (ResEnc's skip projections included). Norms, activations,
// pooling and additions are not counted; they are a few operations per voxel against hundreds per
// convolution. FLOPs are twice this. Throws medseg::Error for other networks.
int64_t forward_macs(const ArchitecturePlan& arch, const std::vector<int>& patch, int in_channels, int classes);

}  // namespace medseg::planning
