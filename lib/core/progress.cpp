#include "core/progress.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "core/error.h"

namespace medseg {

namespace {
std::atomic<bool> g_bars_enabled{true};
}  // namespace

void set_progress_bars_enabled(bool on) { g_bars_enabled = on; }
bool progress_bars_enabled() { return g_bars_enabled; }

ProgressBar::ProgressBar(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled && progress_bars_enabled()),
      tty_(::isatty(2) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::set_postfix(const std::string& s) {
  std::lock_guard<std::mutex> lk(mu_);
  postfix_ = s;
}

void ProgressBar::tick(int64_t n) {
  std::lock_guard<std::mutex> lk(mu_);
  done_ += n;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ > std::chrono::milliseconds(100) || done_ >= total_) {
      last_draw_ = now;
      draw(false);
    }
  } else {
    const int decile = total_ > 0 ? static_cast<int>(10 * done_ / total_) : 10;
    if (decile != last_decile_ && decile < 10) {
      last_decile_ = decile;
      draw(false);
    }
  }
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lk(mu_);
  if (finished_) return;
  finished_ = true;
  if (enabled_) draw(true);
}

void ProgressBar::draw(bool final_line) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  const int width = 30;
  const int fill = static_cast<int>(frac * width + 1e-9);
  std::string bar(static_cast<std::size_t>(fill), '#');
  bar.resize(width, '.');
  const double rate = secs > 0 ? static_cast<double>(done_) / secs : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0.0;
  std::fprintf(stderr, "%s%s [%s] %lld/%lld %.1fs%s%s%s", tty_ ? "\r" : "", label_.c_str(), bar.c_str(),
               static_cast<long long>(done_), static_cast<long long>(total_), secs,
               final_line ? "" : concat(" eta ", static_cast<int>(eta), "s").c_str(),
               postfix_.empty() ? "" : (" " + postfix_).c_str(), (final_line || !tty_) ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace medseg
