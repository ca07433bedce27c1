#pragma once
// The connection threads of medseg_serve's HTTP server. cpp-httplib's own pool has a fixed size: idle or slow
// connections (each held until its read time-out) queue every other request behind them, so 1000 idle
// sockets would keep /v1/health waiting for minutes. This pool grows while every thread is busy, up to
// `max_threads`; beyond that, connections wait their turn. A thread idle for `idle_exit` leaves (all but
// `keep` of them), so a burst of connections does not hold its threads for the server's lifetime.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace medseg::serve {

class ConnectionThreads {
 public:
  explicit ConnectionThreads(std::size_t max_threads, std::chrono::milliseconds idle_exit = std::chrono::seconds(30),
                             std::size_t keep = 8)
      : max_(max_threads), idle_exit_(idle_exit), keep_(keep) {}
  ~ConnectionThreads() { shutdown(); }
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  void enqueue(std::function<void()> fn);
  // Runs what is queued, then joins every thread.
  void shutdown();
  std::size_t threads() const;

 private:
  void work();
  void reap();  // joins the threads that left (under m_)

  const std::size_t max_;
  const std::chrono::milliseconds idle_exit_;
  const std::size_t keep_;
  std::vector<std::thread::id> left_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stop_ = false;
};

}  // namespace medseg::serve
