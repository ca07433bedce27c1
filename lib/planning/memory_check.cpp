#include "planning/memory_check.h"

#include <cstdio>

#include "core/error.h"
#include "core/strings.h"

namespace medseg::planning {
namespace {

std::string gib(double bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, bytes < 1e15 ? "%.1f GiB" : "%.3g GiB", bytes / 1073741824.0);
  return buf;
}

std::string shape(const std::vector<int>& patch) { return "[" + join(patch, ", ") + "]"; }

void refuse_if_above(double needed, const std::string& what, const MemoryLimit& limit, const std::string& source,
                     const std::string& scope) {
  check_bytes_fit(needed, what, limit, source, scope, "check patch_size, batch_size and features_per_stage");
}

}  // namespace

void check_bytes_fit(double bytes, const std::string& what, const MemoryLimit& limit, const std::string& source,
                     const std::string& scope, const std::string& hint) {
  if (limit.bytes <= 0 || bytes <= static_cast<double>(limit.bytes)) return;
  const bool from_env = limit.what == "MEDSEG_MEMORY_LIMIT_GIB";
  const std::string msg = (scope.empty() ? "" : scope + ": ") + what + " needs about " + gib(bytes) +
                          ", more than the " + gib(static_cast<double>(limit.bytes)) + " of " + limit.what + " (" +
                          hint + (from_env ? ")" : "; MEDSEG_MEMORY_LIMIT_GIB sets the limit)");
  MEDSEG_CHECK(!source.empty(), msg);
  throw FileError(source, msg);
}

void check_training_fits(const ArchitecturePlan& arch, const std::vector<int>& patch, int batch,
                         const TrainingStep& step, const MemoryLimit& limit, const std::string& source,
                         const std::string& scope) {
  const std::string what = concat("one training step (patch ", shape(patch), ", batch ", batch, ")");
  // The lower bound first: cheap, and safe from overflow for absurd sizes.
  refuse_if_above(forward_bytes_lower_bound(arch, patch, batch, step.in_channels).total(), what, limit, source, scope);
  double peak = 0;
  try {
    peak = static_cast<double>(
        estimate_training_memory(arch, patch, batch, step.in_channels, step.num_classes, step.options).peak_bytes);
  } catch (const Error&) {
    return;  // a network the byte model does not cover (SwinUNETR v2): the lower bound has to do
  }
  refuse_if_above(peak, what, limit, source, scope);
}

void check_forward_fits(const ArchitecturePlan& arch, const std::vector<int>& patch, int batch, int in_channels,
                        const MemoryLimit& limit, const std::string& source, const std::string& scope) {
  if (patch.empty()) {
    const std::vector<int> one(static_cast<std::size_t>(arch.dim), 1);
    refuse_if_above(forward_bytes_lower_bound(arch, one, 1, in_channels).weights, "the network's weights", limit,
                    source, scope);
    return;
  }
  refuse_if_above(forward_bytes_lower_bound(arch, patch, batch, in_channels).total(),
                  concat("a forward pass (patch ", shape(patch), ", batch ", batch, ")"), limit, source, scope);
}

}  // namespace medseg::planning
