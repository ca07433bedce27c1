#include "training/rank_fit.h"

#include "core/error.h"
#include "planning/spatial_parallel.h"

namespace medseg::training {

int check_ranks_fit(const planning::ConfigurationPlan& plan, int ranks, int spatial_parallel) {
  if (spatial_parallel <= 1) {
    if (ranks > 1 && plan.batch_size < ranks)
      throw Error("the plan's batch size " + std::to_string(plan.batch_size) + " is smaller than the " +
                  std::to_string(ranks) + " ranks: every rank needs at least one sample of the global batch");
    return -1;
  }
  if (ranks != spatial_parallel)
    throw Error("--spatial_parallel " + std::to_string(spatial_parallel) + " needs exactly that many ranks (" +
                std::to_string(ranks) + " in this run); combining it with data parallelism is not supported yet");
  if (plan.architecture.swin)
    throw Error("--spatial_parallel: SwinUNETR cannot be split into slabs (docs/spatial-parallel.md)");
  const int axis = planning::spatial_shard_axis(plan.patch_size, plan.architecture.strides, spatial_parallel);
  if (axis < 0) {
    std::string p;
    for (int v : plan.patch_size) p += (p.empty() ? "" : "x") + std::to_string(v);
    throw Error("--spatial_parallel " + std::to_string(spatial_parallel) + ": no axis of the patch " + p +
                " splits into that many slabs aligned with the network's strides; plan with medseg_plan_experiment "
                "--spatial_parallel " + std::to_string(spatial_parallel));
  }
  return axis;
}

}  // namespace medseg::training
