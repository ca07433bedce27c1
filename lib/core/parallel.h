#pragma once
// Runs a job per item on N threads, items handed out in order. The first exception is rethrown
// after all threads stop; remaining items are skipped.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace medseg {

// The most threads parallel_for starts: four per core. More only add memory and scheduling, and a few
// thousand exhaust the process's limits (issue 42: `--np 3000` aborted a conversion).
inline int max_worker_threads() { return static_cast<int>(std::max(4u, 4 * std::thread::hardware_concurrency())); }

// Items handed out in order to min(threads, n, max_worker_threads()) threads. Should the system refuse a
// thread, the ones already started (or, with none, the calling thread) do the work.
inline void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& job) {
  if (threads <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) job(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr err;
  std::mutex mu;
  auto worker = [&] {
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(mu);
        if (err) return;
      }
      const int64_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        job(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu);
        if (!err) err = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  const int t = static_cast<int>(std::min<int64_t>(std::min(threads, max_worker_threads()), n));
  try {
    for (int k = 0; k < t; ++k) pool.emplace_back(worker);
  } catch (const std::system_error&) {  // EAGAIN: the threads started so far do the work
  }
  if (pool.empty()) worker();
  for (auto& th : pool) th.join();
  if (err) std::rethrow_exception(err);
}

}  // namespace medseg
