#include "core/staging_names.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "core/log.h"

namespace fs = std::filesystem;

namespace medseg {

namespace {

// 8 hex digits of FNV-1a over the host name: pids are only comparable on the host that made them.
std::string host_tag() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  uint32_t h = 2166136261u;
  for (const char* p = name; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == '.')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// The pid in a staging name of this host ("" NAME parts may hold dots: parse from the end); -1
// for any other name.
long staging_pid(const std::string& name, const std::string& host) {
  if (name.size() < 2 || name[0] != '.') return -1;
  const std::vector<std::string> p = split_dots(name.substr(1));
  if (p.size() < 5) return -1;
  const std::size_t n = p.size();
  const std::string &tag = p[n - 4], &h = p[n - 3], &pid = p[n - 2], &rnd = p[n - 1];
  if ((tag != "tmp" && tag != "old") || h != host || !all_digits(pid) || !all_digits(rnd) || pid.size() > 9) return -1;
  return std::stol(pid);
}

}  // namespace

std::string staging_sibling(const std::string& target, const std::string& tag) {
  std::random_device rd;
  const fs::path t(target);
  return (t.parent_path() / ("." + t.filename().string() + "." + tag + "." + host_tag() + "." +
                             std::to_string(::getpid()) + "." + std::to_string(rd())))
      .string();
}

int remove_stale_staging(const std::string& folder) {
  const std::string host = host_tag();
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(folder.empty() ? "." : folder, ec), end; !ec && it != end; it.increment(ec)) {
    const long pid = staging_pid(it->path().filename().string(), host);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    if (rm) continue;
    spdlog::info("removed {}, left by process {} that ended before finishing", it->path().string(), pid);
    ++removed;
  }
  return removed;
}

}  // namespace medseg
