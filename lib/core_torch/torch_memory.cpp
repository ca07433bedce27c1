#include "core_torch/torch_memory.h"

#include <c10/util/Exception.h>

#include <new>
#include <string>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Device.h>
#if defined(MEDSEG_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace medseg {
namespace {

constexpr size_t kAlignment = 64;  // what c10's CPU allocator guarantees

// A freed block kept for reuse (enable_cpu_block_cache): its address, its size, and when it was freed.
struct CachedBlock {
  void* p;
  size_t bytes;
  int64_t freed_at;
};

struct Counters {
  std::mutex mu;
  std::unordered_map<void*, size_t> sizes;  // live blocks
  int64_t current = 0, peak = 0, allocations = 0;
  int64_t limit = 0;  // set_cpu_allocation_limit
  // The block cache: off until enable_cpu_block_cache(). high_water is the most bytes ever live, which
  // live + cached never exceed.
  bool caching = false;
  std::vector<CachedBlock> cached;
  int64_t cached_bytes = 0, high_water = 0, reused = 0, ticks = 0;
};

Counters& counters() {
  static Counters* c = new Counters();  // never destroyed: tensors may be freed during static teardown
  return *c;
}

// Blocks from 1 MiB up are cached. glibc maps and unmaps every block above 32 MiB, and gives the top of its heaps
// back to the kernel (trims them) as blocks below that are freed, so that a training iteration's 2-20 MB
// activations are faulted in again too (docs/training.md, "the CPU block cache"); below 1 MiB its heap reuse is
// left alone. A request takes a cached block at most 1/8 larger than itself.
constexpr size_t kCachedFrom = size_t{1} << 20;

// A cached block for n bytes, the smallest that fits, or nullptr. Called with the lock held.
void* take_cached(Counters& c, size_t& n) {
  auto best = c.cached.end();
  for (auto it = c.cached.begin(); it != c.cached.end(); ++it) {
    if (it->bytes >= n && it->bytes <= n + n / 8 && (best == c.cached.end() || it->bytes < best->bytes)) best = it;
  }
  if (best == c.cached.end()) return nullptr;
  void* p = best->p;
  n = best->bytes;
  c.cached_bytes -= static_cast<int64_t>(n);
  c.cached.erase(best);
  c.reused += 1;
  return p;
}

// Frees the longest-cached blocks until n more live bytes keep live + cached within the high-water mark (or
// raise it with nothing cached). Called with the lock held.
void evict_for(Counters& c, size_t n) {
  const int64_t live = c.current + static_cast<int64_t>(n);
  c.high_water = std::max(c.high_water, live);
  while (!c.cached.empty() && live + c.cached_bytes > c.high_water) {
    auto oldest = std::min_element(c.cached.begin(), c.cached.end(),
                                   [](const CachedBlock& a, const CachedBlock& b) { return a.freed_at < b.freed_at; });
    c.cached_bytes -= static_cast<int64_t>(oldest->bytes);
    std::free(oldest->p);
    c.cached.erase(oldest);
  }
}

void counting_free(void* p) {
  if (!p) return;
  Counters& c = counters();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.sizes.find(p);
    if (it != c.sizes.end()) {
      const size_t bytes = it->second;
      c.current -= static_cast<int64_t>(bytes);
      c.sizes.erase(it);
      if (c.caching && bytes >= kCachedFrom) {
        c.cached.push_back({p, bytes, c.ticks++});
        c.cached_bytes += static_cast<int64_t>(bytes);
        return;
      }
    }
  }
  std::free(p);
}

// Gives every cached block back. With the lock held.
void free_cached(Counters& c) {
  for (const CachedBlock& b : c.cached) std::free(b.p);
  c.cached.clear();
  c.cached_bytes = 0;
}

// A block of n bytes or more: a cached one, or a new one once the cache has made room. With the lock held.
void* new_or_cached(Counters& c, size_t& n) {
  if (c.limit > 0 && c.current + static_cast<int64_t>(n) > c.limit) throw std::bad_alloc();
  if (c.caching && n >= kCachedFrom) {
    if (void* p = take_cached(c, n)) return p;
    evict_for(c, n);
  }
  void* p = nullptr;
  if (posix_memalign(&p, kAlignment, n) == 0 && p) return p;
  if (c.cached.empty()) throw std::bad_alloc();
  free_cached(c);  // what is kept is not worth an allocation failure
  if (posix_memalign(&p, kAlignment, n) != 0 || !p) throw std::bad_alloc();
  return p;
}

// oneDNN's raw_allocate path requires data pointer == context, so the DataPtr carries the raw
// pointer in both slots and the size lives in the map.
struct CountingAllocator final : c10::Allocator {
  c10::DataPtr alloc(size_t n) const {
    if (n == 0) return c10::DataPtr(nullptr, nullptr, &counting_free, c10::Device(c10::kCPU));
    Counters& c = counters();
    std::lock_guard<std::mutex> lock(c.mu);
    void* p = new_or_cached(c, n);
    c.sizes[p] = n;
    c.current += static_cast<int64_t>(n);
    c.allocations += 1;
    c.peak = std::max(c.peak, c.current);
    c.high_water = std::max(c.high_water, c.current);
    return c10::DataPtr(p, p, &counting_free, c10::Device(c10::kCPU));
  }
  // allocate() is const in LibTorch 1.13 and non-const in 2.x; defining both overrides either, so
  // neither can say `override` on both versions.
  c10::DataPtr allocate(size_t n) const { return alloc(n); }  // NOLINT(modernize-use-override)
  c10::DataPtr allocate(size_t n) { return alloc(n); }        // NOLINT(modernize-use-override)
  c10::DeleterFnPtr raw_deleter() const override { return &counting_free; }
  // Pure virtual in 2.x, absent in 1.13.
  void copy_data(void* dest, const void* src, size_t count) const {  // NOLINT(modernize-use-override)
    std::memcpy(dest, src, count);
  }
};

std::mutex g_install_mu;
bool g_installed = false;

}  // namespace

void install_counting_cpu_allocator() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (g_installed) return;
  static CountingAllocator* alloc = new CountingAllocator();
  c10::SetCPUAllocator(alloc, /*priority=*/100);
  g_installed = true;
}

bool counting_cpu_allocator_installed() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  return g_installed;
}

CpuMemoryStats cpu_memory_stats() {
  Counters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  return {c.current, c.peak, c.allocations, c.cached_bytes, c.high_water, c.reused};
}

bool enable_cpu_block_cache() {
  const char* env = std::getenv("MEDSEG_CPU_BLOCK_CACHE");
  if (env != nullptr && std::string(env) == "0") return false;
  install_counting_cpu_allocator();
  Counters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  c.caching = true;
  return true;
}

void release_cpu_block_cache() {
  Counters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  free_cached(c);
  c.high_water = c.current;
}

void set_cpu_allocation_limit(int64_t bytes) {
  Counters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  c.limit = bytes;
}

void reset_cpu_peak() {
  Counters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  c.peak = c.current;
}

CpuPeakScope::CpuPeakScope() {
  install_counting_cpu_allocator();
  reset_cpu_peak();
  start_ = cpu_memory_stats().current_bytes;
}

int64_t CpuPeakScope::peak_above_start() const { return cpu_memory_stats().peak_bytes - start_; }

namespace {

int64_t cuda_total_memory(int device) {
#if defined(MEDSEG_WITH_CUDA)
  return static_cast<int64_t>(at::cuda::getDeviceProperties(device)->totalGlobalMem);
#else
  (void)device;
  return 0;
#endif
}

}  // namespace

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) || dynamic_cast<const std::bad_alloc*>(&e)) return true;
  const std::string what = e.what();
  return what.find("can't allocate memory") != std::string::npos || what.find("out of memory") != std::string::npos;
}

MemoryLimit device_memory_limit(const std::string& device) {
  const MemoryLimit env = memory_limit_override();
  if (env.bytes > 0) return env;
  const c10::Device d(device);
  if (d.is_cuda()) return {cuda_total_memory(d.has_index() ? d.index() : 0), "GPU memory of " + device};
  return {physical_memory_bytes(), "this machine's RAM"};
}

}  // namespace medseg
