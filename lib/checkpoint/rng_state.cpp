#include "checkpoint/rng_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <mutex>

#include "core/torch_compat.h"

namespace medseg::checkpoint {

RngStates capture_rng_states(std::vector<std::string> workers) {
  RngStates s;
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    s.cpu = gen.get_state();
  }
  s.cuda = compat::cuda_rng_states();
  s.workers = std::move(workers);
  return s;
}

void restore_rng_states(const RngStates& states) {
  if (states.cpu.defined()) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(states.cpu);
  }
  compat::set_cuda_rng_states(states.cuda);
}

}  // namespace medseg::checkpoint
