#pragma once
// A thread-safe progress bar on stderr. Draws in place on a terminal, prints a few plain lines
// otherwise (logs, CI), and can be silenced.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace medseg {

// Process-wide switch for a CLI's --no_pbar: bars created while it is off stay silent, including
// those deep inside library calls (final validation, evaluation) that take no flag of their own.
void set_progress_bars_enabled(bool on);
bool progress_bars_enabled();

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, bool enabled = true);
  ~ProgressBar();
  void tick(int64_t n = 1);
  void set_postfix(const std::string& s);
  void finish();

 private:
  void draw(bool final_line);
  std::string label_;
  int64_t total_, done_ = 0;
  bool enabled_, tty_, finished_ = false;
  int last_decile_ = -1;
  std::string postfix_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mu_;
};

}  // namespace medseg
