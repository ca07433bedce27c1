#include "planning/network_flops.h"

#include "planning/memory_ops.h"

namespace medseg::planning {

int64_t forward_macs(const ArchitecturePlan& arch, const std::vector<int>& patch, int in_channels, int classes) {
  // The memory model's op list is the network's layer list with each layer's shapes (memory_unet_ops.cpp
  // builds it, and throws for a network it does not describe); each op carries its multiply-accumulates.
  MemoryOptions opt;
  opt.deep_supervision = false;
  const detail::StepSettings step{4, 1};
  int64_t macs = 0;
  for (const detail::Op& op : detail::unet_ops(arch, patch, in_channels, classes, opt, step, false)) macs += op.macs;
  return macs;
}

}  // namespace medseg::planning
