#pragma once
// Federated averaging of checkpoints: the mean of every floating-point "weights/" tensor over the
// inputs; everything else (integer buffers, optimizer state, RNG, metadata) comes from the first.
// Alias-aware: the output keeps the first file's storage sharing, so its size does not grow.
#include <string>
#include <vector>

namespace medseg::checkpoint {

// Throws Error naming the file for a missing key or a shape mismatch.
void average_checkpoints(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace medseg::checkpoint
