#include "serve/connection_threads.h"

namespace medseg::serve {

void ConnectionThreads::reap() {
  for (const std::thread::id id : left_)
    for (auto it = threads_.begin(); it != threads_.end(); ++it)
      if (it->get_id() == id) {
        it->join();  // it has returned from work(), or is about to
        threads_.erase(it);
        break;
      }
  left_.clear();
}

void ConnectionThreads::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> l(m_);
  reap();
  tasks_.push_back(std::move(fn));
  if (idle_ < tasks_.size() && threads_.size() < max_) {
    threads_.emplace_back([this] { work(); });
  } else {
    cv_.notify_one();
  }
}

void ConnectionThreads::work() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    ++idle_;
    const bool woke = cv_.wait_for(l, idle_exit_, [&] { return stop_ || !tasks_.empty(); });
    --idle_;
    if (!woke && threads_.size() - left_.size() > keep_) {
      left_.push_back(std::this_thread::get_id());  // joined by the next enqueue (or shutdown)
      return;
    }
    if (!woke) continue;
    if (tasks_.empty()) return;  // stopping, nothing left
    std::function<void()> fn = std::move(tasks_.front());
    tasks_.pop_front();
    l.unlock();
    fn();
    l.lock();
  }
}

void ConnectionThreads::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> l(m_);
    stop_ = true;
    threads.swap(threads_);
    left_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

std::size_t ConnectionThreads::threads() const {
  std::lock_guard<std::mutex> l(m_);
  return threads_.size();
}

}  // namespace medseg::serve
