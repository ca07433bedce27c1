#pragma once
// A counting CPU allocator for memory tests and benchmarks: once installed it serves every later CPU
// tensor allocation (oneDNN's included) and tracks live and peak bytes. Allocations made before
// installation keep their original deleter and are not counted.
#include <cstdint>
#include <exception>
#include <string>

#include "core/system_memory.h"

namespace medseg {

struct CpuMemoryStats {
  int64_t current_bytes = 0;  // live bytes allocated through the counting allocator
  int64_t peak_bytes = 0;     // highest current_bytes since install / the last reset_cpu_peak()
  int64_t allocations = 0;    // number of allocations served
};

// Installs the allocator process-wide (idempotent; it is never uninstalled).
void install_counting_cpu_allocator();
bool counting_cpu_allocator_installed();
CpuMemoryStats cpu_memory_stats();
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
