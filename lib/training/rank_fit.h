#pragma once
// Whether a plan can be trained on a number of ranks, decided from the plan alone, so that the
// launcher refuses once, in one line, before it starts any rank, and a lone torchrun-style rank
// says so instead of waiting --dist-timeout for ranks that could not train anyway.
#include <string>

#include "plans/plans.h"

namespace medseg::training {

// `ranks`: the run's world size; `spatial_parallel`: --spatial_parallel (<= 1: data parallelism).
// Error for a batch smaller than the ranks (data parallelism), or, with spatial parallelism, a world
// size other than --spatial_parallel, SwinUNETR, or a patch with no axis that splits into that many
// slabs aligned with the network's strides. Returns the slab axis, -1 without spatial parallelism.
int check_ranks_fit(const planning::ConfigurationPlan& plan, int ranks, int spatial_parallel);

}  // namespace medseg::training
