#pragma once
// How much memory the machine gives this process, for the check before large allocations
// (planning/memory_check.h).
#include <cstdint>
#include <string>

namespace medseg {

// Bytes a device offers, with a description for messages ("this machine's RAM"). 0 bytes: unknown,
// nothing is checked.
struct MemoryLimit {
  int64_t bytes = 0;
  std::string what;
};

// Physical RAM, or the container's cgroup memory limit when that is smaller. 0 when unknown.
int64_t physical_memory_bytes();

// Memory a new allocation can still get: MEDSEG_MEMORY_LIMIT_GIB when set, else the kernel's
// MemAvailable (/proc/meminfo), capped by what a cgroup limit leaves (limit - usage). 0 when unknown.
int64_t available_memory_bytes();

// MEDSEG_MEMORY_LIMIT_GIB when set (it replaces the device's memory), else bytes = 0. Throws Error for
// a value that is not a positive number of GiB.
MemoryLimit memory_limit_override();

}  // namespace medseg
