// SwinUNETRPlanner (medseg's own): MONAI SwinUNETR with window 7, patch sizes divisible by 32,
// the preset's feature size (48; 24 below 16 GB), sized with the byte memory model. Gradient
// checkpointing is switched on only when it is what makes a patch fit.
#include <algorithm>

#include "core/error.h"
#include "planning/planner_internal.h"

namespace medseg::planning::detail {
namespace {

constexpr int64_t kSwinDivisor = 32;  // MONAI requires every spatial size % 2^5 == 0

ordered_json swin_arch_json(int dim, int feature_size, bool use_checkpoint) {
  ordered_json k;
  k["spatial_dims"] = dim;
  k["feature_size"] = feature_size;
  k["depths"] = {2, 2, 2, 2};
  k["num_heads"] = {3, 6, 12, 24};
  k["window_size"] = 7;
  k["patch_size"] = 2;
  k["use_v2"] = false;
  k["use_checkpoint"] = use_checkpoint;
  k["drop_rate"] = 0.0;
  k["attn_drop_rate"] = 0.0;
  k["dropout_path_rate"] = 0.0;
  k["normalize"] = true;
  k["norm_name"] = "instance";
  ordered_json a;
  a["network_class_name"] = "medseg.SwinUNETR";
  a["arch_kwargs"] = k;
  a["_kw_requires_import"] = ordered_json::array();
  return a;
}

}  // namespace

ConfigOut plan_swin_configuration(Ctx& c, const std::vector<double>& spacing, const std::vector<double>& median,
                                  const std::string& data_identifier, double approx_n_voxels) {
  const int dim = static_cast<int>(spacing.size());
  const SwinPreset& s = c.spec.swin;
  const int feature = c.target_gb < s.small_target_below_gb ? s.small_target_feature_size : s.feature_size;
  const MemoryOptions mo = c.memory_options();
  const double budget = c.budget_bytes();
  std::vector<int64_t> patch = pad_shape(initial_patch(spacing, median), std::vector<int64_t>(dim, kSwinDivisor));
  auto arch = [&](bool ckpt) {
    return architecture_from_json(json::parse(swin_arch_json(dim, feature, ckpt).dump()), "planner");
  };
  auto fits = [&](bool ckpt, int b) {
    const std::vector<int> p(patch.begin(), patch.end());
    return static_cast<double>(
               estimate_training_memory(arch(ckpt), p, b, c.in_channels(), c.ds.num_labels, mo).peak_bytes) <= budget;
  };
  bool ckpt = false;
  while (true) {
    if (fits(false, c.spec.min_batch)) break;
    if (fits(true, c.spec.min_batch)) {
      ckpt = true;
      break;
    }
    std::vector<bool> allowed;
    for (auto p : patch) allowed.push_back(p > kSwinDivisor);
    MEDSEG_CHECK(std::any_of(allowed.begin(), allowed.end(), [](bool b) { return b; }), c.spec.name, ": even a 32^",
                 dim, " patch with batch ", c.spec.min_batch, " and checkpointing exceeds ", c.target_gb,
                 " GB minus headroom");
    patch[axis_to_shrink(patch, median, allowed)] -= kSwinDivisor;
  }
  const std::vector<int> p(patch.begin(), patch.end());
  int64_t bs = max_batch_for_budget(arch(ckpt), p, c.in_channels(), c.ds.num_labels, mo, budget);
  bs = cap_batch_size(c, bs, patch, approx_n_voxels);
  ordered_json plan = configuration_json(c, data_identifier, bs, patch, median, false, spacing);
  plan["architecture"] = swin_arch_json(dim, feature, ckpt);
  return {plan, patch};
}

}  // namespace medseg::planning::detail
