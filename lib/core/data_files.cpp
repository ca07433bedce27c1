#include "core/data_files.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg {

namespace {

// The folder of the running executable ("" if /proc/self/exe cannot be read).
fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

}  // namespace

std::string shipped_data_dir(const std::string& subdir) {
  if (const char* share = std::getenv("MEDSEG_SHARE_DIR"); share && *share) return (fs::path(share) / subdir).string();
  const fs::path exe = executable_dir();
  const fs::path installed = exe.empty() ? fs::path() : (exe.parent_path() / "share" / "medseg" / subdir);
  std::error_code ec;
  if (!installed.empty() && fs::is_directory(installed, ec)) return installed.lexically_normal().string();
#if defined(MEDSEG_SOURCE_DIR) && defined(MEDSEG_BUILD_DIR)
  // Only a program of the build tree reads the source tree: an installed one (moved or not) never does.
  const std::string build = fs::path(MEDSEG_BUILD_DIR).lexically_normal().string();
  if (!exe.empty() && (exe.lexically_normal().string() + "/").rfind(build + "/", 0) == 0)
    return (fs::path(MEDSEG_SOURCE_DIR) / subdir).string();
#endif
  return installed.empty() ? subdir : installed.lexically_normal().string();
}

std::vector<std::string> data_search_dirs(const std::string& subdir, const std::string& env_var,
                                          const std::string& flag_dir, const std::string& flag_name) {
  std::vector<std::string> dirs;
  auto add_user_dir = [&](const std::string& d, const std::string& from) {
    MEDSEG_CHECK_FILE(fs::is_directory(d), d, "no such folder (given by ", from, ")");
    dirs.push_back(d);
  };
  if (!flag_dir.empty()) add_user_dir(flag_dir, flag_name);
  const char* env = std::getenv(env_var.c_str());
  if (env && *env) add_user_dir(env, "$" + env_var);
  dirs.push_back(shipped_data_dir(subdir));
  return dirs;
}

std::string find_named_json(const std::vector<std::string>& dirs, const std::string& name) {
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / (name + ".json");
    if (fs::is_regular_file(p)) return p.string();
  }
  return "";
}

std::vector<std::string> named_jsons(const std::vector<std::string>& dirs) {
  std::vector<std::string> names;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".json" && it->is_regular_file(ec)) names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace medseg
