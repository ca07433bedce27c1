#include "training/rank_fit.h"

#include "core/error.h"
#include "core/strings.h"
#include "planning/spatial_parallel.h"

namespace medseg::training {

int check_ranks_fit(const planning::ConfigurationPlan& plan, int ranks, int spatial_parallel) {
  if (spatial_parallel <= 1) {
    MEDSEG_CHECK(ranks <= 1 || plan.batch_size >= ranks, "the plan's batch size ", plan.batch_size,
                 " is smaller than the ", ranks, " ranks: every rank needs at least one sample of the global batch");
    return -1;
  }
  MEDSEG_CHECK(ranks == spatial_parallel, "--spatial_parallel ", spatial_parallel, " needs exactly that many ranks (",
               ranks, " in this run); combining it with data parallelism is not supported yet");
  MEDSEG_CHECK(!plan.architecture.swin && !plan.architecture.primus,
               "--spatial_parallel: ", plan.architecture.short_name,
               " cannot be split into slabs (docs/spatial_parallel.md)");
  const int axis = planning::spatial_shard_axis(plan.patch_size, plan.architecture.strides, spatial_parallel);
  MEDSEG_CHECK(axis >= 0, "--spatial_parallel ", spatial_parallel, ": no axis of the patch ",
               join(plan.patch_size, "x"),
               " splits into that many slabs aligned with the network's strides; plan with medseg_plan_experiment "
               "--spatial_parallel ",
               spatial_parallel);
  return axis;
}

}  // namespace medseg::training
