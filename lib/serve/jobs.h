#pragma once
// The server's jobs (docs/serve.md): a bounded queue of uploaded cases, their state as the workers advance
// them, and their results until fetched plus a time to live. Each job owns one private folder under the
// server's scratch root; the store removes it when the job ends without a result, and when a result
// expires. Thread-safe; the HTTP handlers and the workers share one store.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace medseg::serve {

enum class JobState { Queued, Running, Done, Failed, Cancelled };
const char* state_name(JobState s);

// What a worker needs to run a job.
struct JobInput {
  std::string model;                   // a served model's name
  std::string folder;                  // the job's private folder (inputs in input/, outputs in output/)
  std::vector<std::string> files;      // the case's uploaded files, in channel order
  std::string output_format = "auto";  // medseg_predict's --output_format
  int64_t bytes = 0;                   // the upload's size, counted against the scratch bound
};

// A job as a client sees it.
struct JobView {
  std::string id, model;
  JobState state = JobState::Queued;
  double progress = 0;
  std::string error;                           // one line, Failed only
  std::string result_file;                     // Done: the segmentation in the format asked at submission
  std::map<std::string, std::string> results;  // Done: every format written ("nifti", "dicom_seg", "rtstruct") -> file
  std::string overlay_file;                    // Done: its overlay picture ("" when none was drawn)
  double seconds = 0;                          // time running (so far)
};

// Refusals a handler turns into an HTTP status.
struct QueueFull : Error {
  using Error::Error;
};  // 429
struct NoScratch : Error {
  using Error::Error;
};  // 507
struct UnknownJob : Error {
  using Error::Error;
};  // 404
struct JobConflict : Error {
  using Error::Error;
};  // 409

struct JobStoreOptions {
  std::size_t max_queue = 16;      // queued jobs (running ones not counted)
  int64_t max_scratch_bytes = 0;   // uploads + results held at once; 0: unbounded
  double result_ttl_s = 600;       // a result stays this long after its first fetch
  double unfetched_ttl_s = 86400;  // an ended job nobody fetched goes after this long
};

// Counts for /v1/metrics.
struct StoreCounts {
  std::map<JobState, int64_t> current;  // jobs held, by state
  std::map<JobState, int64_t> ended;    // jobs ended since start: Done, Failed, Cancelled
  int64_t scratch_bytes = 0;
  double run_seconds_sum = 0;  // over ended jobs that ran
  int64_t run_count = 0;
};

class JobStore {
 public:
  using Clock = std::chrono::steady_clock;
  explicit JobStore(JobStoreOptions o);

  // Throws QueueFull when max_queue jobs wait, NoScratch when `bytes` more would pass the bound. A
  // reservation is taken before the upload is read and given back (release) when it is not submitted.
  void reserve(int64_t bytes);
  void release(int64_t bytes);
  // Queues a reserved upload; returns the job's id (128 random bits, hex).
  std::string submit(JobInput in);

  // Worker side. next() blocks until a job is queued or close() was called (then nullopt).
  std::optional<std::pair<std::string, JobInput>> next();
  // Records progress; false when the job was asked to stop (DELETE): the worker cancels it.
  bool progress(const std::string& id, double fraction);
  // `results`: format -> file; `result_file` (one of them) is the one asked at submission.
  void done(const std::string& id, const std::string& result_file, const std::map<std::string, std::string>& results,
            const std::string& overlay_file);
  void failed(const std::string& id, const std::string& error);
  void cancelled(const std::string& id);

  // Client side. Throw UnknownJob.
  JobView view(const std::string& id) const;
  // The result's file, marking the job fetched (its TTL starts). Throws JobConflict unless Done.
  JobView fetch(const std::string& id);
  // Cancels a queued job at once, or asks a running one to stop. Returns the state after the call
  // (Cancelled, or Running while the worker stops). Throws JobConflict for an ended or stopping job.
  JobState cancel(const std::string& id);

  // Removes expired jobs and their folders. Returns how many went.
  int expire(Clock::time_point now = Clock::now());
  // Stops next() and refuses reservations; queued jobs are cancelled. Running ones go on.
  void close();
  // Asks every running job to stop (their workers cancel them at the next tile).
  void stop_running();
  bool closed() const;
  // Waits until no job runs, up to `deadline`; true when none does.
  bool wait_idle(Clock::time_point deadline);

  std::size_t queued() const;
  StoreCounts counts() const;

 private:
  struct Job {
    JobInput input;
    JobState state = JobState::Queued;
    double progress = 0;
    bool stop = false;
    std::string error, result_file, overlay_file;
    std::map<std::string, std::string> results;
    Clock::time_point started, ended;
    std::optional<Clock::time_point> fetched;
    int64_t result_bytes = 0;
  };
  Job& find(const std::string& id);
  const Job& find(const std::string& id) const;
  void end(Job& j, JobState s);
  JobView view_of(const std::string& id, const Job& j) const;

  JobStoreOptions o_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::map<std::string, Job> jobs_;
  std::deque<std::string> queue_;
  int64_t scratch_ = 0;
  std::size_t reserved_ = 0;  // uploads being read: they count against max_queue
  bool closed_ = false;
  StoreCounts totals_;
};

}  // namespace medseg::serve
