#pragma once
// The threaded training/validation loader: N worker std::threads build batches ahead into a bounded
// window and the consumer receives them strictly in order.
//
// Determinism contract: batch `index` of `epoch` is build_batch(cases, cfg, seed, epoch, index), a
// pure function of those values, so the stream is identical for any number of workers and any
// thread timing, and a loader constructed from a saved LoaderState continues with exactly the
// batches the saved one would have produced next.
//
// Threading: each worker runs torch ops single-threaded (at::set_num_threads(1) on the worker; with
// the OpenMP backend this sets the worker's own OpenMP thread count, plus the process default that
// threads created later start from) under NoGradGuard. The constructor fixes the calling thread's
// intra-op thread count first so the workers cannot shrink it, and the destructor restores the
// process default. Worker exceptions reach the consumer from next(), naming the case.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/json_io.h"
#include "data/batch.h"
#include "data/case_source.h"

namespace medseg::data {

struct LoaderOptions {
  int num_workers = 2;              // 0: batches are built on the calling thread inside next()
  int num_cached = 0;               // batches built ahead; 0: max(6, num_workers / 2) like nnU-Net
  int64_t batches_per_epoch = 250;  // nnU-Net: 250 training, 50 validation iterations
  bool pin_memory = false;          // pinned output tensors (only when CUDA is available)
  // Added to each worker thread's niceness (Linux; the calling thread and the process keep theirs). Training on
  // the CPU sets it, so that building batches ahead yields the cores to the network's threads and takes what
  // they leave (docs/data_pipeline.md, "Worker priority"); 0 leaves the workers as they start.
  int worker_nice = 0;
};

// Where a loader stands: enough to resume it exactly (store it in checkpoints).
struct LoaderState {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t next_batch = 0;  // index within the epoch of the batch next() returns next

  json to_json() const;
  static LoaderState from_json(const json& j);  // throws Error on missing or bad fields
  bool operator==(const LoaderState& o) const {
    return seed == o.seed && epoch == o.epoch && next_batch == o.next_batch;
  }
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const CaseSource> cases, PipelineConfig cfg, LoaderOptions opt, LoaderState start);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch in order. Rethrows a worker's failure (and keeps rethrowing it).
  Batch next();
  LoaderState state() const;
  const PipelineConfig& config() const { return cfg_; }
  int num_workers() const { return static_cast<int>(workers_.size()); }
  int64_t window() const { return window_; }

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };
  LoaderState position(int64_t seq) const;
  Batch build(int64_t seq) const;
  void worker_loop();

  std::shared_ptr<const CaseSource> cases_;
  PipelineConfig cfg_;
  LoaderOptions opt_;
  uint64_t seed_ = 0;
  int64_t window_ = 1;
  int owner_threads_ = 1;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  int64_t next_claim_ = 0, next_deliver_ = 0;  // sequence numbers: epoch * batches_per_epoch + index
  std::map<int64_t, Slot> ready_;
  bool stop_ = false, failed_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace medseg::data
