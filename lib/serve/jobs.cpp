#include "serve/jobs.h"

#include <filesystem>
#include <random>
#include <system_error>

namespace fs = std::filesystem;

namespace medseg::serve {

namespace {

// 128 bits from the system's random source: an id nobody can guess (another client's job is not reachable
// by counting).
std::string random_id() {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {
    uint32_t v = rd();
    for (int k = 0; k < 8; ++k, v >>= 4) id.push_back(hex[v & 15u]);
  }
  return id;
}

void remove_folder(const std::string& folder) {
  std::error_code ec;
  fs::remove_all(folder, ec);  // best effort: the scratch root goes at shutdown anyway
}

int64_t file_bytes(const std::string& f) {
  std::error_code ec;
  const auto n = f.empty() ? 0 : fs::file_size(f, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

bool ended(JobState s) { return s == JobState::Done || s == JobState::Failed || s == JobState::Cancelled; }

}  // namespace

const char* state_name(JobState s) {
  switch (s) {
    case JobState::Queued: return "queued";
    case JobState::Running: return "running";
    case JobState::Done: return "done";
    case JobState::Failed: return "failed";
    case JobState::Cancelled: return "cancelled";
  }
  return "?";
}

JobStore::JobStore(JobStoreOptions o) : o_(o) {}

void JobStore::reserve(int64_t bytes) {
  std::lock_guard<std::mutex> l(m_);
  if (closed_) throw QueueFull("the server is stopping");
  if (queue_.size() + reserved_ >= o_.max_queue)
    throw QueueFull(concat("the queue is full (", o_.max_queue, " jobs wait); retry later"));
  if (o_.max_scratch_bytes > 0 && scratch_ + bytes > o_.max_scratch_bytes)
    throw NoScratch(concat("the server's scratch space is full (", o_.max_scratch_bytes / (1024 * 1024),
                           " MB held by uploads and results); fetch or let results expire, then retry"));
  scratch_ += bytes;
  ++reserved_;
}

void JobStore::release(int64_t bytes) {
  std::lock_guard<std::mutex> l(m_);
  scratch_ -= bytes;
  --reserved_;
}

std::string JobStore::submit(JobInput in) {
  std::string id;
  {
    std::lock_guard<std::mutex> l(m_);
    --reserved_;
    do id = random_id();
    while (jobs_.count(id));
    Job j;
    j.input = std::move(in);
    jobs_.emplace(id, std::move(j));
    queue_.push_back(id);
  }
  cv_.notify_one();
  return id;
}

std::optional<std::pair<std::string, JobInput>> JobStore::next() {
  std::unique_lock<std::mutex> l(m_);
  cv_.wait(l, [&] { return closed_ || !queue_.empty(); });
  if (closed_) return std::nullopt;
  const std::string id = queue_.front();
  queue_.pop_front();
  Job& j = jobs_.at(id);
  j.state = JobState::Running;
  j.started = Clock::now();
  return std::make_pair(id, j.input);
}

bool JobStore::progress(const std::string& id, double fraction) {
  std::lock_guard<std::mutex> l(m_);
  Job& j = find(id);
  j.progress = fraction;
  return !j.stop;
}

void JobStore::end(Job& j, JobState s) {
  j.state = s;
  j.ended = Clock::now();
  ++totals_.ended[s];
  if (j.started != Clock::time_point{}) {
    totals_.run_seconds_sum += std::chrono::duration<double>(j.ended - j.started).count();
    ++totals_.run_count;
  }
  scratch_ -= j.input.bytes;  // the inputs went with the run; a result is counted in their place
  j.input.bytes = 0;
  if (s != JobState::Done) remove_folder(j.input.folder);
  cv_.notify_all();
}

void JobStore::done(const std::string& id, const std::string& result_file,
                    const std::map<std::string, std::string>& results, const std::string& overlay_file) {
  std::lock_guard<std::mutex> l(m_);
  Job& j = find(id);
  j.result_file = result_file;
  j.results = results;
  j.overlay_file = overlay_file;
  j.result_bytes = file_bytes(overlay_file);
  for (const auto& [format, file] : results) j.result_bytes += file_bytes(file);
  scratch_ += j.result_bytes;
  j.progress = 1;
  end(j, JobState::Done);
}

void JobStore::failed(const std::string& id, const std::string& error) {
  std::lock_guard<std::mutex> l(m_);
  Job& j = find(id);
  j.error = error;
  end(j, JobState::Failed);
}

void JobStore::cancelled(const std::string& id) {
  std::lock_guard<std::mutex> l(m_);
  end(find(id), JobState::Cancelled);
}

JobStore::Job& JobStore::find(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) throw UnknownJob("no job '" + id + "' (unknown, or its result expired)");
  return it->second;
}

const JobStore::Job& JobStore::find(const std::string& id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) throw UnknownJob("no job '" + id + "' (unknown, or its result expired)");
  return it->second;
}

JobView JobStore::view_of(const std::string& id, const Job& j) const {
  JobView v;
  v.id = id;
  v.model = j.input.model;
  v.state = j.state;
  v.progress = j.progress;
  v.error = j.error;
  v.result_file = j.result_file;
  v.results = j.results;
  v.overlay_file = j.overlay_file;
  if (j.started != Clock::time_point{})
    v.seconds = std::chrono::duration<double>((ended(j.state) ? j.ended : Clock::now()) - j.started).count();
  return v;
}

JobView JobStore::view(const std::string& id) const {
  std::lock_guard<std::mutex> l(m_);
  return view_of(id, find(id));
}

JobView JobStore::fetch(const std::string& id) {
  std::lock_guard<std::mutex> l(m_);
  Job& j = find(id);
  if (j.state != JobState::Done)
    throw JobConflict(concat("job '", id, "' is ", state_name(j.state), ": it has no result",
                             j.state == JobState::Failed ? " (" + j.error + ")" : std::string()));
  if (!j.fetched) j.fetched = Clock::now();
  return view_of(id, j);
}

JobState JobStore::cancel(const std::string& id) {
  std::lock_guard<std::mutex> l(m_);
  Job& j = find(id);
  if (ended(j.state)) throw JobConflict(concat("job '", id, "' is already ", state_name(j.state)));
  if (j.stop) throw JobConflict(concat("job '", id, "' is already being cancelled"));
  if (j.state == JobState::Queued) {
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if (*it == id) {
        queue_.erase(it);
        break;
      }
    end(j, JobState::Cancelled);
    return JobState::Cancelled;
  }
  j.stop = true;
  return JobState::Running;
}

int JobStore::expire(Clock::time_point now) {
  std::lock_guard<std::mutex> l(m_);
  int n = 0;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const Job& j = it->second;
    const auto age = [&](Clock::time_point t) { return std::chrono::duration<double>(now - t).count(); };
    const bool gone = ended(j.state) && ((j.fetched && age(*j.fetched) >= o_.result_ttl_s) ||
                                         (!j.fetched && age(j.ended) >= o_.unfetched_ttl_s) ||
                                         (j.state != JobState::Done && age(j.ended) >= o_.result_ttl_s));
    if (!gone) {
      ++it;
      continue;
    }
    remove_folder(j.input.folder);
    scratch_ -= j.result_bytes;
    it = jobs_.erase(it);
    ++n;
  }
  return n;
}

void JobStore::close() {
  {
    std::lock_guard<std::mutex> l(m_);
    closed_ = true;
    for (const std::string& id : queue_) end(jobs_.at(id), JobState::Cancelled);
    queue_.clear();
  }
  cv_.notify_all();
}

void JobStore::stop_running() {
  std::lock_guard<std::mutex> l(m_);
  for (auto& [id, j] : jobs_)
    if (j.state == JobState::Running) j.stop = true;
}

bool JobStore::closed() const {
  std::lock_guard<std::mutex> l(m_);
  return closed_;
}

bool JobStore::wait_idle(Clock::time_point deadline) {
  std::unique_lock<std::mutex> l(m_);
  return cv_.wait_until(l, deadline, [&] {
    for (const auto& [id, j] : jobs_)
      if (j.state == JobState::Running) return false;
    return true;
  });
}

std::size_t JobStore::queued() const {
  std::lock_guard<std::mutex> l(m_);
  return queue_.size();
}

StoreCounts JobStore::counts() const {
  std::lock_guard<std::mutex> l(m_);
  StoreCounts c = totals_;
  c.current.clear();
  for (JobState s : {JobState::Queued, JobState::Running, JobState::Done, JobState::Failed, JobState::Cancelled})
    c.current[s] = 0;
  for (const auto& [id, j] : jobs_) ++c.current[j.state];
  c.scratch_bytes = scratch_;
  return c;
}

}  // namespace medseg::serve
