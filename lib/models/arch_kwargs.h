#pragma once
// From a parsed plans `architecture` block to the option structs of the networks. nnU-Net's
// arch_kwargs are read once, by planning::architecture_from_json (the same parser plans_from_json uses);
// this maps its ArchitecturePlan onto UNetOptions / SwinUNETROptions and refuses what this port does
// not build. Python class paths are matched by their last component ("torch.nn.modules.conv.Conv3d" -> Conv3d).
#include "models/swin_unetr.h"
#include "models/unet.h"
#include "plans/plans.h"

namespace medseg::models {

// 2 or 3 from conv_op ("...Conv2d" / "...Conv3d"); throws medseg::Error otherwise.
int dims_from_conv_op(const std::string& conv_op);

// The UNetOptions of a PlainConvUNet / ResidualEncoderUNet plan. Throws medseg::Error naming the key
// for what is missing for this class and for features this port does not build (BottleneckD, custom
// stems, nonlin_first, other norms or nonlinearities).
UNetOptions unet_options(const planning::ArchitecturePlan& plan, int64_t in_channels, int64_t num_classes);

// The SwinUNETROptions of a medseg.SwinUNETR plan (patch size 2 only).
SwinUNETROptions swin_options(const planning::ArchitecturePlan& plan, int64_t in_channels, int64_t out_channels);

}  // namespace medseg::models
