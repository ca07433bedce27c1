#include "support/test_support.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <random>
#include <stdexcept>

namespace fs = std::filesystem;

namespace medseg::test {

TempDir::TempDir(const std::string& tag) {
  std::random_device rd;
  fs::path p = fs::temp_directory_path() / ("medseg_" + tag + "_" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(p);
  path_ = p.string();
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!std::getenv("MEDSEG_KEEP_TEST_DIRS")) fs::remove_all(path_, ec);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::map<std::string, std::string> folder_snapshot(const std::string& folder) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> files;
  if (!fs::exists(folder)) return files;
  for (const auto& e : fs::recursive_directory_iterator(folder)) {
    std::string entry = "<dir>";
    if (e.is_regular_file()) {
      const std::string bytes = read_text(e.path().string());
      entry = std::to_string(bytes.size()) + " bytes, hash " + std::to_string(std::hash<std::string>{}(bytes));
    }
    files[fs::relative(e.path(), folder).string()] = entry;
  }
  return files;
}

std::string bin_dir() {
  const char* d = std::getenv("MEDSEG_BIN_DIR");
  if (!d) throw std::runtime_error("MEDSEG_BIN_DIR is not set (run the tests through ctest)");
  return d;
}

std::string source_path(const std::string& rel) {
  const char* d = std::getenv("MEDSEG_SOURCE_DIR");
  return std::string(d ? d : MEDSEG_TEST_SOURCE_DIR) + "/" + rel;
}

CmdResult run_cli(const std::string& app, const std::string& args, const std::string& env) {
  const std::string cmd = env + (env.empty() ? "" : " ") + bin_dir() + "/" + app + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

}  // namespace medseg::test
