#include "data/data_loader.h"

#include <ATen/Parallel.h>
#include <torch/utils.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/error.h"
#include "core/strings.h"

namespace medseg::data {

namespace {

// Adds `by` to this thread's niceness, up to 19 (Linux's niceness is per thread: the process and the other threads
// keep theirs). A failure leaves the thread as it was, which only makes it compete as before.
void lower_this_threads_priority(int by) {
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return;
  (void)setpriority(PRIO_PROCESS, tid, std::min(19, now + by));
}

}  // namespace

json LoaderState::to_json() const {
  return json{{"version", 1}, {"seed", seed}, {"epoch", epoch}, {"next_batch", next_batch}};
}

LoaderState LoaderState::from_json(const json& j) {
  try {
    LoaderState s;
    s.seed = j.at("seed").get<uint64_t>();
    s.epoch = j.at("epoch").get<int64_t>();
    s.next_batch = j.at("next_batch").get<int64_t>();
    return s;
  } catch (const std::exception& e) { throw Error("data loader state: " + one_line(e.what())); }
}

DataLoader::DataLoader(std::shared_ptr<const CaseSource> cases, PipelineConfig cfg, LoaderOptions opt,
                       LoaderState start)
    : cases_(std::move(cases)), cfg_(std::move(cfg)), opt_(opt), seed_(start.seed) {
  MEDSEG_CHECK(cases_ && cases_->size() != 0, "data loader: no cases");
  MEDSEG_CHECK(opt_.batches_per_epoch >= 1, "data loader: batches_per_epoch must be >= 1");
  MEDSEG_CHECK(start.epoch >= 0 && start.next_batch >= 0, "data loader: negative start position");
  next_claim_ = next_deliver_ = start.epoch * opt_.batches_per_epoch + start.next_batch;
  const int n = std::max(0, opt_.num_workers);
  const int cached = opt_.num_cached > 0 ? opt_.num_cached : std::max(6, n / 2);
  window_ = std::max(cached, n);  // never leave a worker idle for want of room
  // Initialise this thread's intra-op count now, before any worker changes the process default.
  owner_threads_ = at::get_num_threads();
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  if (!workers_.empty()) at::set_num_threads(owner_threads_);  // the process default the workers lowered
}

LoaderState DataLoader::position(int64_t seq) const {
  return {seed_, seq / opt_.batches_per_epoch, seq % opt_.batches_per_epoch};
}

Batch DataLoader::build(int64_t seq) const {
  const LoaderState p = position(seq);
  return build_batch(*cases_, cfg_, seed_, p.epoch, p.next_batch, opt_.pin_memory);
}

void DataLoader::worker_loop() {
  at::set_num_threads(1);
  if (opt_.worker_nice > 0) lower_this_threads_priority(opt_.worker_nice);
  torch::NoGradGuard no_grad;
  for (;;) {
    int64_t seq = 0;
    {
      std::unique_lock<std::mutex> lk(mu_);
      work_cv_.wait(lk, [&] { return stop_ || (!failed_ && next_claim_ < next_deliver_ + window_); });
      if (stop_) return;
      seq = next_claim_++;
    }
    Slot slot;
    try {
      slot.batch = build(seq);
    } catch (...) { slot.error = std::current_exception(); }
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (slot.error) failed_ = true;
      ready_[seq] = std::move(slot);
    }
    ready_cv_.notify_all();
  }
}

Batch DataLoader::next() {
  if (workers_.empty()) {
    // Single-threaded torch ops here too, so the batch is bit-identical to a worker's.
    torch::NoGradGuard no_grad;
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    struct Restore {
      int n;
      ~Restore() { at::set_num_threads(n); }
    } restore{threads};
    Batch b = build(next_deliver_);
    ++next_deliver_;
    return b;
  }
  std::unique_lock<std::mutex> lk(mu_);
  ready_cv_.wait(lk, [&] { return ready_.count(next_deliver_) > 0; });
  auto it = ready_.find(next_deliver_);
  if (it->second.error) std::rethrow_exception(it->second.error);  // slot kept: later calls fail alike
  Batch b = std::move(it->second.batch);
  ready_.erase(it);
  ++next_deliver_;
  lk.unlock();
  work_cv_.notify_all();
  return b;
}

LoaderState DataLoader::state() const {
  std::lock_guard<std::mutex> lk(mu_);
  return position(next_deliver_);
}

}  // namespace medseg::data
