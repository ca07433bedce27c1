#pragma once
// Helpers shared by the tests: scratch folders, and running the built CLIs.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace medseg::test {

// A fresh empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "t");
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

struct CmdResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// The build's bin folder (MEDSEG_BIN_DIR, set by ctest).
std::string bin_dir();

// Runs a CLI from the build's bin folder (MEDSEG_BIN_DIR), or the program at an absolute path, with a
// shell-quoted argument string.
CmdResult run_cli(const std::string& app, const std::string& args, const std::string& env = "");

// A CLI started and held at a known step (start_held_cli), or started until it printed a marker.
struct PausedCli {
  int pid = -1;         // -1: it could not be started
  bool paused = false;  // false: it ended (or printed nothing for a minute) before the point
  std::string output;   // stdout and stderr so far
};

// Starts `app` from the build's bin folder with `args` (not shell-quoted: one per element) and
// `env` ("NAME=value" each) added to the environment, held at `hold` by tests/support/hold_shim.cpp (LD_PRELOAD):
// "syncfs" (its first syncfs call) or "rename:<path>" (the rename that moves something to <path>). Returns once
// it is held (`paused`), or when it ended or printed nothing for a minute.
PausedCli start_held_cli(const std::string& app, const std::vector<std::string>& args, const std::string& hold,
                         const std::vector<std::string>& env = {});

// Starts `app` likewise (without the pause) and returns once its output holds `marker` (a server's
// "listening on"); `paused` says whether it did within a minute.
PausedCli start_cli_until(const std::string& app, const std::vector<std::string>& args, const std::string& marker,
                          const std::vector<std::string>& env = {});

// Sends `signal` to it and waits: the exit code as run_cli reports it (128 + the signal when it
// died of one). Also gathers the rest of its output.
int signal_and_wait(PausedCli& cli, int signal);

// The whole file as text ("" when missing): for failure messages.
std::string read_text(const std::string& path);

// Relative path -> "<size> bytes, hash <h>" for every file under `folder` ("<dir>" for folders; {}
// when it does not exist): byte-identical trees give equal maps, and a failure prints short.
std::map<std::string, std::string> folder_snapshot(const std::string& folder);

// The flags of /proc/cpuinfo's first "flags" line ({} when there is none): the kernel's word on the processor, to hold
// medseg's own CPUID reading (core/cpu_features.h) and what depends on it to.
std::set<std::string> kernel_cpu_flags();

// Path of a source-tree file (MEDSEG_SOURCE_DIR).
std::string source_path(const std::string& rel);

// The float whose IEEE-754 bits are `bits` (expected values that numpy printed as bits).
float float_from_bits(uint32_t bits);
// ((i * 7919) % 10007 - 5000) * 0.37f: data that numpy computes identically in float32, for flat index i.
float numpy_test_value(int64_t i);

}  // namespace medseg::test
