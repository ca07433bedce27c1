#pragma once
// Every random-number-generator state a resumed run needs to continue the same random stream.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace medseg::checkpoint {

struct RngStates {
  at::Tensor cpu;                    // default CPU generator (uint8 state tensor)
  std::vector<at::Tensor> cuda;      // default CUDA generator per device; empty without CUDA
  std::vector<std::string> workers;  // opaque per-data-worker states (bytes), owned by the caller
};

// Captures the CPU and CUDA default generators; `workers` is stored as given.
RngStates capture_rng_states(std::vector<std::string> workers = {});

// Restores the CPU and CUDA generators (the worker states are for the caller to hand back).
void restore_rng_states(const RngStates& states);

}  // namespace medseg::checkpoint
