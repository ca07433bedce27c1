#pragma once
// A counting CPU allocator for memory tests and benchmarks: once installed it serves every later CPU
// tensor allocation (oneDNN's included) and tracks live and peak bytes. Allocations made before
// installation keep their original deleter and are not counted. It can also keep freed blocks for reuse
// (enable_cpu_block_cache), which the programs that run networks on the CPU turn on.
#include <cstdint>
#include <exception>
#include <string>

#include "core/system_memory.h"

namespace medseg {

struct CpuMemoryStats {
  int64_t current_bytes = 0;  // live bytes allocated through the counting allocator
  int64_t peak_bytes = 0;     // highest current_bytes since install / the last reset_cpu_peak()
  int64_t allocations = 0;    // number of allocations served
  int64_t cached_bytes = 0;   // freed blocks the block cache holds for reuse
  int64_t high_water = 0;     // most bytes ever live (since install / release_cpu_block_cache)
  int64_t reused = 0;         // allocations served from the block cache
};

// Installs the allocator process-wide (idempotent; it is never uninstalled).
void install_counting_cpu_allocator();
bool counting_cpu_allocator_installed();
CpuMemoryStats cpu_memory_stats();
// Keeps freed CPU blocks of 1 MiB and more for reuse by a later allocation of the same size (up to 1/8
// smaller), process-wide from now on; installs the counting allocator if needed. Why: glibc returns every
// block above 32 MiB to the kernel when it is freed (and trims its heaps as smaller ones are), and the next one
// is faulted in page by page and zeroed by the kernel again: a network's activations on a 128^3 tile cost as
// much system time as the convolutions (docs/predict.md, "Memory reuse"). The cache never holds more than the live
// bytes' high-water mark minus the live bytes (it frees the longest-kept blocks first to stay within it), so the
// process's peak is the one it would have without the cache; memory is given back by release_cpu_block_cache, not after
// a peak. MEDSEG_CPU_BLOCK_CACHE=0 in the environment leaves it off (returns false).
bool enable_cpu_block_cache();
// Frees every cached block and lowers the high-water mark to the live bytes.
void release_cpu_block_cache();

// Sets the peak to the current live bytes.
void reset_cpu_peak();

// Tests of out-of-memory handling: once installed, an allocation that would take the live bytes
// above `bytes` throws std::bad_alloc (0: no limit, the default). Process-wide; set it back to 0.
void set_cpu_allocation_limit(int64_t bytes);

// Measures the peak of one region relative to the bytes live when the scope starts.
class CpuPeakScope {
 public:
  CpuPeakScope();  // installs the allocator if needed and resets the peak
  int64_t start_bytes() const { return start_; }
  int64_t peak_above_start() const;

 private:
  int64_t start_;
};

// True for an allocation failure: torch's out-of-memory error (CUDA), its CPU allocator's "can't
// allocate memory", or std::bad_alloc.
bool is_out_of_memory(const std::exception& e);

// The memory a device ("cpu", "cuda", "cuda:1") offers: MEDSEG_MEMORY_LIMIT_GIB when set, else the
// GPU's total memory, or for the CPU the machine's RAM (or the container's cgroup limit).
MemoryLimit device_memory_limit(const std::string& device);

}  // namespace medseg
