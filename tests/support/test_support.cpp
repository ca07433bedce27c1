#include "support/test_support.h"

#include <cstring>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

namespace {
// The Python references some tests run (nnU-Net's trainer, dynamic-network-architectures' Primus) make torch
// create $TMPDIR/torchinductor_$USER on import, which would outlive the test run. Their cache goes into the build
// tree instead, for every Python process a test starts (they inherit the environment); a value set by the caller
// stays.
[[maybe_unused]] const bool kTorchCacheInBuildTree = [] {
  return setenv("TORCHINDUCTOR_CACHE_DIR", MEDSEG_TEST_BINARY_DIR "/tests/torchinductor-cache", 0) == 0;
}();
}  // namespace

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

std::set<std::string> kernel_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
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
  const std::string program = app.rfind('/', 0) == 0 ? app : bin_dir() + "/" + app;  // absolute: as given
  const std::string cmd = env + (env.empty() ? "" : " ") + program + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

namespace {

// The pipe of each started CLI (its stdout and stderr), by pid.
std::map<int, int>& cli_pipes() {
  static std::map<int, int> pipes;
  return pipes;
}

// Reads what is there until `until` appears in `out` (or, with "", until the end), at most
// `timeout_ms` without new output. Returns false at the end of the output or on a timeout.
bool read_output(int fd, std::string& out, const std::string& until, int timeout_ms) {
  char buf[4096];
  for (;;) {
    if (!until.empty() && out.find(until) != std::string::npos) return true;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

PausedCli start_cli_until(const std::string& app, const std::vector<std::string>& args, const std::string& marker,
                          const std::vector<std::string>& env) {
  // Everything the child needs is built before fork(): after it, only exec-safe calls.
  const std::string exe = bin_dir() + "/" + app;
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fds[2];
  PausedCli cli;
  if (::pipe(fds) != 0) return cli;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return cli;
  }
  cli.pid = pid;
  cli_pipes()[pid] = fds[0];
  cli.paused = read_output(fds[0], cli.output, marker, 60000);
  return cli;
}

PausedCli start_held_cli(const std::string& app, const std::vector<std::string>& args, const std::string& hold,
                         const std::vector<std::string>& env) {
  std::vector<std::string> e = {std::string("LD_PRELOAD=") + MEDSEG_TEST_HOLD_SHIM, "MEDSEG_TEST_HOLD=" + hold};
  e.insert(e.end(), env.begin(), env.end());
  return start_cli_until(app, args, "medseg-test: held at " + hold, e);
}

int signal_and_wait(PausedCli& cli, int signal) {
  if (cli.pid < 0) return -1;
  ::kill(cli.pid, signal);
  const int fd = cli_pipes()[cli.pid];
  read_output(fd, cli.output, "", 60000);
  ::close(fd);
  cli_pipes().erase(cli.pid);
  int status = 0;
  if (::waitpid(cli.pid, &status, 0) != cli.pid) return -1;
  cli.pid = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float numpy_test_value(int64_t i) { return static_cast<float>((i * 7919) % 10007 - 5000) * 0.37f; }

}  // namespace medseg::test
