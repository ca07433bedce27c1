#pragma once
// Every difference between Debian's LibTorch 1.13 (CPU) and PyTorch 2.x's LibTorch (CUDA) lives
// here, so no other file needs a version or CUDA #if.
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#if defined(MEDSEG_WITH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#define MEDSEG_TORCH_AT_LEAST(maj, min) (TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR >= (maj)*100 + (min))

namespace medseg::compat {

inline std::string torch_version() { return TORCH_VERSION; }

inline bool built_with_cuda() {
#if defined(MEDSEG_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

// CUDA runtime and cuDNN versions compiled into this LibTorch (e.g. 13000 and 91900); 0 in a CPU
// build. Both hooks exist in 1.13 and 2.x; a CPU build's hooks throw, so they are not asked there.
struct CudaVersions {
  long cudart = 0;
  long cudnn = 0;
};
inline CudaVersions cuda_versions() {
  CudaVersions v;
#if defined(MEDSEG_WITH_CUDA)
  const auto& hooks = at::detail::getCUDAHooks();
  if (hooks.hasCUDART()) v.cudart = hooks.versionCUDART();
  if (hooks.hasCuDNN()) v.cudnn = hooks.versionCuDNN();
#endif
  return v;
}

// --- autocast -------------------------------------------------------------------------------
// The per-device API appeared in 2.4; 1.13 only has the gpu/cpu-specific setters.
inline bool autocast_enabled(bool cuda) {
#if MEDSEG_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast(bool cuda, bool enabled, c10::ScalarType dtype) {
#if MEDSEG_TORCH_AT_LEAST(2, 4)
  const auto dev = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(dev, dtype);
  at::autocast::set_autocast_enabled(dev, enabled);
#else
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

inline c10::ScalarType autocast_dtype(bool cuda) {
#if MEDSEG_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

// CPU autocast's op lists: before pytorch#92527 (merged February 2023, so 2.0 or 2.1) transposed
// convolutions were in the fp32 list; 1.13's behaviour is measured by medseg_bench_memory.
inline constexpr bool cpu_autocast_transposed_conv_fp32() { return !MEDSEG_TORCH_AT_LEAST(2, 1); }

// --- cuDNN ------------------------------------------------------------------------------------
inline void set_cudnn(bool benchmark, bool deterministic) {
  at::globalContext().setBenchmarkCuDNN(benchmark);
  at::globalContext().setDeterministicCuDNN(deterministic);
}
inline bool cudnn_benchmark() { return at::globalContext().benchmarkCuDNN(); }

// --- CUDA memory ------------------------------------------------------------------------------
// Bytes the CUDA caching allocator holds for tensors now, and at most since the last reset;
// zeros without CUDA.
struct CudaAllocated {
  int64_t current = 0;
  int64_t peak = 0;
};
inline CudaAllocated cuda_allocated(int device = 0) {
#if defined(MEDSEG_WITH_CUDA)
  // Index 0 is StatType::AGGREGATE in every version; the type moved namespaces in 2.x.
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);  // a copy in 2.x
  const auto& s = stats.allocated_bytes[0];
  return {s.current, s.peak};
#else
  (void)device;
  return {};
#endif
}
// Bytes a new allocation on `device` can still get: the driver's free memory plus what the caching
// allocator reserved but holds no tensor in. 0 without CUDA or when the driver cannot tell.
inline int64_t cuda_free_memory(int device = 0) {
#if defined(MEDSEG_WITH_CUDA)
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));  // restores the current device
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error
    return 0;
  }
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  return static_cast<int64_t>(free) + stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;
#else
  (void)device;
  return 0;
#endif
}
inline void cuda_reset_peak(int device = 0) {
#if defined(MEDSEG_WITH_CUDA)
  c10::cuda::CUDACachingAllocator::resetPeakStats(device);
#else
  (void)device;
#endif
}

// --- optimizer state ----------------------------------------------------------------------------
// torch::optim::Optimizer::state() is keyed by the parameter's TensorImpl: as a pointer string
// ("0x...") in 1.13, as the void* itself in 2.x. Pass the state map to get the right key type.
template <class StateMap>
typename StateMap::key_type optimizer_state_key(const StateMap&, const at::Tensor& p) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream ss;  // what c10::guts::to_string(TensorImpl*) produced
    ss << p.unsafeGetTensorImpl();
    return ss.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

// --- RNG --------------------------------------------------------------------------------------
// States of the default CUDA generators, one per device; empty without CUDA.
inline std::vector<at::Tensor> cuda_rng_states() {
  std::vector<at::Tensor> out;
  if (!torch::cuda::is_available()) return out;
  const auto n = static_cast<int>(torch::cuda::device_count());
  for (int i = 0; i < n; ++i) {
    const at::Generator& g =
        at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i)));
    std::lock_guard<std::mutex> lock(const_cast<at::Generator&>(g).mutex());
    out.push_back(g.get_state());
  }
  return out;
}
// Restores what cuda_rng_states() returned; states for devices that do not exist are ignored.
inline void set_cuda_rng_states(const std::vector<at::Tensor>& states) {
  if (states.empty() || !torch::cuda::is_available()) return;
  const auto n = std::min<size_t>(states.size(), torch::cuda::device_count());
  for (size_t i = 0; i < n; ++i) {
    at::Generator g = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i)));
    std::lock_guard<std::mutex> lock(g.mutex());
    g.set_state(states[i]);
  }
}

// --- grid_sample ----------------------------------------------------------------------------------
// grid_sample's nearest mode puts a position exactly between two voxels on the even one in 2.11 (as
// std::nearbyint; BG2's order-0 augmentation on torch 2.x does so); LibTorch 1.13's 3D CPU kernel put
// it on the one away from zero. medseg's own resampler (data/augment/resample.cpp) rounds as 2.x does
// on either version; the batched augmentation path, which calls grid_sample, differs there on 1.13.
inline constexpr bool kGridSampleNearestHalfToEven = MEDSEG_TORCH_AT_LEAST(2, 0);

}  // namespace medseg::compat

// --- LibTorch warnings ----------------------------------------------------------------------------
// Routes TORCH_WARN messages of this thread (and of autograd's, which replays them here) to `sink`
// while it lives. 1.13: c10::Warning:: and process(location, msg, verbatim); 2.0 moved both to
// c10::WarningUtils:: and process(const c10::Warning&).
namespace medseg::compat {

class ScopedTorchWarnings {
 public:
  explicit ScopedTorchWarnings(std::function<void(const std::string&)> sink) : handler_(std::move(sink)) {
#if MEDSEG_TORCH_AT_LEAST(2, 0)
    previous_ = c10::WarningUtils::get_warning_handler();
    c10::WarningUtils::set_warning_handler(&handler_);
#else
    previous_ = c10::Warning::get_warning_handler();
    c10::Warning::set_warning_handler(&handler_);
#endif
  }
  ~ScopedTorchWarnings() {
#if MEDSEG_TORCH_AT_LEAST(2, 0)
    c10::WarningUtils::set_warning_handler(previous_);
#else
    c10::Warning::set_warning_handler(previous_);
#endif
  }
  ScopedTorchWarnings(const ScopedTorchWarnings&) = delete;
  ScopedTorchWarnings& operator=(const ScopedTorchWarnings&) = delete;

 private:
  class Handler : public c10::WarningHandler {
   public:
    explicit Handler(std::function<void(const std::string&)> sink) : sink_(std::move(sink)) {}
#if MEDSEG_TORCH_AT_LEAST(2, 0)
    void process(const c10::Warning& warning) override { sink_(warning.msg()); }
#else
    void process(const c10::SourceLocation&, const std::string& msg, const bool) override { sink_(msg); }
#endif
   private:
    std::function<void(const std::string&)> sink_;
  };
  Handler handler_;
  c10::WarningHandler* previous_ = nullptr;
};

}  // namespace medseg::compat

// --- attention ------------------------------------------------------------------------------------
// softmax(q k^T / sqrt(d)) v, no mask, no dropout. 2.0 added the fused kernel (flash / memory-efficient,
// what timm's attention calls); 1.13 spells it out, which holds the (N, N) weights in memory.
#include <ATen/Functions.h>

namespace medseg::compat {

inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if MEDSEG_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v);
#else
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  return at::matmul(at::softmax(at::matmul(q * scale, k.transpose(-2, -1)), -1), v);
#endif
}

}  // namespace medseg::compat

// --- c10d (distributed/) ------------------------------------------------------------------------
// Only a file that defines MEDSEG_TORCH_COMPAT_C10D before its first include sees this part, so
// the c10d headers stay out of every other translation unit. NCCL exists only in CUDA builds of
// LibTorch (USE_C10D_NCCL); Debian's CPU package has Gloo alone.
#if defined(MEDSEG_TORCH_COMPAT_C10D)
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#if defined(USE_C10D_NCCL) && defined(MEDSEG_WITH_CUDA)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <chrono>
#include <stdexcept>

namespace medseg::compat {

// 1.13: ProcessGroupGloo is a c10d::ProcessGroup. 2.x split the two: a backend (Gloo, NCCL) is
// registered on a ProcessGroup per device type, and the Reducer takes the ProcessGroup. (The 2.x
// branch follows PyTorch's own init_process_group; it is not built on this machine.)
inline c10::intrusive_ptr<c10d::ProcessGroup> wrap_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                           int size, c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo) {
#if MEDSEG_TORCH_AT_LEAST(2, 1)
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
  return pg;
#else
  (void)store, (void)rank, (void)size;
  return gloo;
#endif
}

inline c10::intrusive_ptr<c10d::ProcessGroup> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                              int size, std::chrono::milliseconds timeout) {
#if defined(USE_C10D_NCCL) && defined(MEDSEG_WITH_CUDA)
  auto o = c10d::ProcessGroupNCCL::Options::create();
  o->timeout = timeout;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("nccl", store);
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, rank, size, o);
#if MEDSEG_TORCH_AT_LEAST(2, 1)
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(prefixed, rank, size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
  pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, nccl);
  return pg;
#else
  return nccl;
#endif
#else
  (void)store, (void)rank, (void)size, (void)timeout;
  throw std::runtime_error(
      "training on CUDA with several ranks needs NCCL, and this LibTorch has none "
      "(build against PyTorch's CUDA LibTorch, -DTorch_DIR=...)");
#endif
}

}  // namespace medseg::compat
#endif

// --- DDP's Reducer (distributed/gradient_sync.cpp) -------------------------------------------------
// Only a file that defines MEDSEG_TORCH_COMPAT_REDUCER before its first include sees this part (c10d's
// reducer.hpp is heavy). 2.x dropped the per-bucket size limits from the constructor and added
// skip_all_reduce_unused_params, use_python_reducer and bucket_bytes_cap_list (empty: bucket_bytes_cap
// for every rebuilt bucket, as DDP's own default).
#if defined(MEDSEG_TORCH_COMPAT_REDUCER)
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <memory>
#include <unordered_map>

namespace medseg::compat {

// The constructor is chosen by its signature rather than a version number (which release changed it
// is not what matters); R is a template parameter so that only the matching call is compiled.
template <class R = c10d::Reducer>
std::unique_ptr<R> make_reducer(std::vector<at::Tensor> params, std::vector<std::vector<size_t>> buckets,
                                std::vector<size_t> bucket_limits, c10::intrusive_ptr<c10d::ProcessGroup> group,
                                std::vector<bool> sparse, int64_t bucket_bytes, bool find_unused,
                                std::unordered_map<size_t, std::string> names, int64_t first_bucket_bytes) {
  using Names = std::unordered_map<size_t, std::string>;
  constexpr bool without_limits =
      std::is_constructible_v<R, std::vector<at::Tensor>, std::vector<std::vector<size_t>>,
                              c10::intrusive_ptr<c10d::ProcessGroup>, std::vector<bool>, int64_t, bool, bool, Names,
                              int64_t, bool, bool, std::vector<int64_t>>;
  if constexpr (without_limits) {
    (void)bucket_limits;
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group), std::move(sparse), bucket_bytes,
                               find_unused, /*gradient_as_bucket_view=*/false, std::move(names), first_bucket_bytes,
                               /*skip_all_reduce_unused_params=*/false,
                               /*use_python_reducer=*/false, /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
  } else {
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(bucket_limits), std::move(group),
                               std::move(sparse), bucket_bytes, find_unused, /*gradient_as_bucket_view=*/false,
                               std::move(names), first_bucket_bytes);
  }
}

}  // namespace medseg::compat
#endif
