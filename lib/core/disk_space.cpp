#include "core/disk_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg {

uint64_t free_bytes(const std::string& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  std::error_code ec;
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statvfs st {};
  MEDSEG_CHECK_FILE(::statvfs(p.c_str(), &st) == 0, p.string(),
                    "cannot ask the file system for its free space: ", std::strerror(errno));
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

void check_free_space(const std::string& path, uint64_t needed, const std::string& what) {
  const uint64_t available = free_bytes(path);
  MEDSEG_CHECK_FILE(needed <= available, path, "needs ", byte_size_text(needed), " (", what,
                    ") but the file system has only ", byte_size_text(available), " free; nothing was written");
}

std::string byte_size_text(uint64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return concat(bytes, " bytes");
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace medseg
