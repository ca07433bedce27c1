#pragma once
namespace medseg::planning {

// Ranges the plans reader accepts (docs/plans.md, "Value checks"). They only keep out values that
// cannot work (0, negative, overflowing); whether a large network fits is the memory check's job.
struct PlanLimits {
  static constexpr int max_batch_size = 65536;
  static constexpr int max_patch_edge = 16384;
  static constexpr int max_stages = 32;
  static constexpr int max_features = 16384;
  static constexpr int max_kernel_size = 15;  // odd: 'same' padding needs it
  static constexpr int max_stride = 16;
  static constexpr int max_convs_per_stage = 64;
};

}  // namespace medseg::planning
