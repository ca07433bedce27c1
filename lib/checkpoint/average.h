#pragma once
// Federated averaging of checkpoints: the mean of every floating-point "weights/" tensor over the
// inputs; integer buffers and the JSON copies (plans, dataset, trainer config) come from the first.
// The result is weights-only (meta.weights_only): no optimizer, grad scaler, RNG, sampler, logs or
// EMA, because none of the inputs' states belongs to the average, so --c refuses it.
// Alias-aware: the output keeps the first file's storage sharing, so its size does not grow.
#include <string>
#include <vector>

namespace medseg::checkpoint {

// Throws Error naming the file for a missing key or a shape mismatch.
void average_checkpoints(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace medseg::checkpoint
