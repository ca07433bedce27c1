#include "core/system_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

#include "core/error.h"

namespace medseg {
namespace {

// A cgroup limit file holds a byte count, or "max" (v2) / a huge number (v1) when unlimited.
int64_t cgroup_limit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return 0;
  try {
    return static_cast<int64_t>(std::min<unsigned long long>(std::stoull(text), INT64_MAX));
  } catch (...) { return 0; }
}

}  // namespace

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  int64_t bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
  for (const char* f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const int64_t limit = cgroup_limit(f);
    if (limit > 0 && (bytes == 0 || limit < bytes)) bytes = limit;
  }
  return bytes;
}

int64_t available_memory_bytes() {
  const MemoryLimit forced = memory_limit_override();
  if (forced.bytes > 0) return forced.bytes;
  int64_t bytes = 0;
  std::ifstream info("/proc/meminfo");
  std::string key, unit;
  long long kib = 0;
  while (info >> key >> kib) {
    std::getline(info, unit);
    if (key == "MemAvailable:") {
      bytes = static_cast<int64_t>(kib) * 1024;
      break;
    }
  }
  const std::pair<const char*, const char*> cgroups[] = {
      {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
      {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}};
  for (const auto& [limit_file, usage_file] : cgroups) {
    const int64_t limit = cgroup_limit(limit_file), usage = cgroup_limit(usage_file);
    if (limit > 0 && limit < (int64_t{1} << 60)) {
      const int64_t left = std::max<int64_t>(0, limit - usage);
      if (bytes == 0 || left < bytes) bytes = left;
    }
  }
  return bytes;
}

MemoryLimit memory_limit_override() {
  const char* v = std::getenv("MEDSEG_MEMORY_LIMIT_GIB");
  if (!v || !*v) return {};
  char* end = nullptr;
  const double g = std::strtod(v, &end);
  MEDSEG_CHECK(end != v && *end == '\0' && g > 0 && g <= 1e9,
               "MEDSEG_MEMORY_LIMIT_GIB must be a positive number of GiB, got '", v, "'");
  return {static_cast<int64_t>(g * 1073741824.0), "MEDSEG_MEMORY_LIMIT_GIB"};
}

}  // namespace medseg
