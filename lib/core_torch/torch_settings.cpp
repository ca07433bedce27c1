#include "core_torch/torch_settings.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/utils.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "core/parallel.h"
#include "core/torch_compat.h"

namespace medseg {

struct ScopedTorchSettings::Saved {
  int threads = 1;
  bool cudnn_benchmark = false, cudnn_deterministic = false;
  bool deterministic_algorithms = false, deterministic_warn_only = false;
  at::Tensor cpu_rng;  // undefined when no seed was set
  std::vector<at::Tensor> cuda_rng;
};

namespace {

at::Tensor cpu_rng_state() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const at::Tensor& state) {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace

ScopedTorchSettings::ScopedTorchSettings(const TorchSettings& settings) : saved_(std::make_unique<Saved>()) {
  at::Context& ctx = at::globalContext();
  Saved& s = *saved_;
  s.threads = at::get_num_threads();
  s.cudnn_benchmark = ctx.benchmarkCuDNN();
  s.cudnn_deterministic = ctx.deterministicCuDNN();
  s.deterministic_algorithms = ctx.deterministicAlgorithms();
  s.deterministic_warn_only = ctx.deterministicAlgorithmsWarnOnly();

  // Bounded like every pool (core/parallel.h): thousands of intra-op threads only spin (issue 42).
  if (settings.threads > 0) at::set_num_threads(std::min(settings.threads, max_worker_threads()));
  compat::set_cudnn(settings.cudnn_benchmark && !settings.deterministic, settings.deterministic);
  if (settings.deterministic) ctx.setDeterministicAlgorithms(true, false);
  if (settings.seed) {
    s.cpu_rng = cpu_rng_state();
    s.cuda_rng = compat::cuda_rng_states();
    torch::manual_seed(*settings.seed);
  }
}

ScopedTorchSettings::~ScopedTorchSettings() {
  const Saved& s = *saved_;
  if (at::get_num_threads() != s.threads) at::set_num_threads(s.threads);
  compat::set_cudnn(s.cudnn_benchmark, s.cudnn_deterministic);
  at::globalContext().setDeterministicAlgorithms(s.deterministic_algorithms, s.deterministic_warn_only);
  if (s.cpu_rng.defined()) set_cpu_rng_state(s.cpu_rng);
  compat::set_cuda_rng_states(s.cuda_rng);
}

}  // namespace medseg
