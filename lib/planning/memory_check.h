#pragma once
// The check before a network is built (docs/train_cli.md, "Memory check"): a plan whose patch, batch
// or feature sizes cannot fit the device is refused with one line naming the plans file and the
// configuration, instead of torch failing in a huge allocation.
//
// Rule: the limit is the device's memory (core_torch/torch_memory.h: the GPU's total memory, the machine's
// RAM or cgroup limit for the CPU; MEDSEG_MEMORY_LIMIT_GIB replaces it). Training is refused when the
// byte memory model's peak for one step exceeds the limit; prediction and the other tools when even
// a lower bound of one forward pass does. All sums are in double, so absurd sizes cannot overflow.
#include <string>
#include <vector>

#include "core/system_memory.h"
#include "planning/memory_model.h"
#include "plans/plans.h"

namespace medseg::planning {

struct TrainingStep {
  int in_channels = 1, num_classes = 2;
  MemoryOptions options;
};

// Throws Error("<source>: <scope>: one training step (...) needs about X GiB, more than the Y GiB of ...").
void check_training_fits(const ArchitecturePlan& arch, const std::vector<int>& patch, int batch,
                         const TrainingStep& step, const MemoryLimit& limit, const std::string& source,
                         const std::string& scope);

// The rule of both checks for any other allocation of `bytes` (the sliding window's tile list):
// throws FileError(source, "<scope>: <what> needs about X GiB, more than the Y GiB of <limit> (<hint>...)"),
// or Error when `source` is empty, when `bytes` exceeds the limit.
void check_bytes_fit(double bytes, const std::string& what, const MemoryLimit& limit, const std::string& source,
                     const std::string& scope, const std::string& hint);

// The same for a forward pass of `batch` patches (prediction's tiles, medseg_model_info). With an
// empty patch only the weights are checked (medseg_init_model).
void check_forward_fits(const ArchitecturePlan& arch, const std::vector<int>& patch, int batch, int in_channels,
                        const MemoryLimit& limit, const std::string& source, const std::string& scope);

}  // namespace medseg::planning
