#include "serve/metrics.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace medseg::serve {

int64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  if (!(f >> pages >> resident)) return 0;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

namespace {

void family(std::ostringstream& s, const char* name, const char* type, const char* help) {
  s << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

std::string prometheus_text(const StoreCounts& c, std::size_t queue_length, int64_t resident, int workers) {
  std::ostringstream s;
  s.precision(17);
  family(s, "medseg_serve_queue_length", "gauge", "Jobs waiting for a worker.");
  s << "medseg_serve_queue_length " << queue_length << '\n';
  family(s, "medseg_serve_jobs", "gauge", "Jobs the server holds, by state.");
  for (const auto& [state, n] : c.current)
    s << "medseg_serve_jobs{state=\"" << state_name(state) << "\"} " << n << '\n';
  family(s, "medseg_serve_jobs_ended_total", "counter", "Jobs ended since the server started, by outcome.");
  for (JobState st : {JobState::Done, JobState::Failed, JobState::Cancelled}) {
    const auto it = c.ended.find(st);
    s << "medseg_serve_jobs_ended_total{state=\"" << state_name(st) << "\"} " << (it == c.ended.end() ? 0 : it->second)
      << '\n';
  }
  family(s, "medseg_serve_job_seconds", "summary", "Seconds from a job's start on a worker to its end.");
  s << "medseg_serve_job_seconds_sum " << c.run_seconds_sum << "\nmedseg_serve_job_seconds_count " << c.run_count
    << '\n';
  family(s, "medseg_serve_scratch_bytes", "gauge", "Bytes of uploads and results held on disk.");
  s << "medseg_serve_scratch_bytes " << c.scratch_bytes << '\n';
  family(s, "medseg_serve_workers", "gauge", "Prediction threads, each with every model loaded.");
  s << "medseg_serve_workers " << workers << '\n';
  family(s, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  s << "process_resident_memory_bytes " << resident << '\n';
  return s.str();
}

}  // namespace medseg::serve
