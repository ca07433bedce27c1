#pragma once
// nnU-Net's VRAM proxy: the number of conv output elements of one sample, as computed by
// dynamic-network-architectures' compute_conv_feature_map_size (not bytes). The planner compares it
// with reference values calibrated in nnU-Net, so it must match DNA's counting exactly.
#include <cstdint>
#include <vector>

#include "planning/topology.h"

namespace medseg::planning {

struct UNetShape {
  bool residual_encoder = false;        // ResidualEncoderUNet (BasicBlockD) instead of PlainConvUNet
  std::vector<int64_t> features;        // per stage
  std::vector<IntVec> strides;          // per stage (first row usually ones)
  std::vector<int64_t> encoder_blocks;  // n_conv_per_stage (plain) or n_blocks_per_stage (residual)
  std::vector<int64_t> decoder_convs;   // n_conv_per_stage_decoder, one per decoder stage
  int64_t num_classes = 2;
  bool deep_supervision = false;  // nnU-Net's planner builds the net without it
};

// Sum of conv output elements, encoder and decoder (transposed convs and segmentation heads included).
int64_t conv_feature_map_size(const UNetShape& net, const IntVec& patch);

}  // namespace medseg::planning
