// medseg_serve's parts on their own (lib/serve): the job store's queue bound, states, cancels and time to live
// against a clock the test moves; the token comparison; what an upload's first bytes say it is; the options a
// server may not start with; the Prometheus text; the connection pool's bound.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "serve/auth.h"
#include "serve/connection_threads.h"
#include "serve/jobs.h"
#include "serve/metrics.h"
#include "serve/options.h"
#include "serve/upload.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::serve;
namespace fs = std::filesystem;

namespace {

JobInput input(const test::TempDir& d, const std::string& name, int64_t bytes = 10) {
  JobInput in;
  in.model = "m";
  in.folder = d / name;
  in.bytes = bytes;
  fs::create_directories(in.folder);
  return in;
}

std::string queue_one(JobStore& s, const test::TempDir& d, const std::string& name, int64_t bytes = 10) {
  s.reserve(bytes);
  return s.submit(input(d, name, bytes));
}

}  // namespace

TEST(ServeJobs, TheQueueIsBoundedAndAReservationCountsUntilGivenBack) {
  test::TempDir d("jobs");
  JobStore s({2, 0, 600, 86400});
  queue_one(s, d, "a");
  s.reserve(10);  // an upload being read holds a place
  EXPECT_THROW(s.reserve(10), QueueFull);
  s.release(10);
  queue_one(s, d, "b");
  EXPECT_THROW(s.reserve(10), QueueFull);
  EXPECT_EQ(s.queued(), 2u);
  auto job = s.next();  // a worker takes one: a place frees
  ASSERT_TRUE(job);
  EXPECT_EQ(s.view(job->first).state, JobState::Running);
  EXPECT_NO_THROW(s.reserve(10));
}

TEST(ServeJobs, TheScratchBoundCountsUploadsAndResults) {
  test::TempDir d("jobs");
  JobStore s({10, 100, 600, 86400});
  const std::string a = queue_one(s, d, "a", 60);
  EXPECT_THROW(s.reserve(50), NoScratch);  // 60 + 50 > 100
  auto job = s.next();
  const std::string result = d / "a/result.bin";
  std::ofstream(result) << std::string(30, 'x');
  s.done(a, result, {{"nifti", result}}, "");
  EXPECT_EQ(s.counts().scratch_bytes, 30);  // the upload's 60 went with the run; the result's 30 stay
  EXPECT_NO_THROW(s.reserve(70));
}

TEST(ServeJobs, CancelsEndQueuedJobsAtOnceAndAskRunningOnesToStop) {
  test::TempDir d("jobs");
  JobStore s({4, 0, 600, 86400});
  const std::string running = queue_one(s, d, "r"), queued = queue_one(s, d, "q");
  ASSERT_EQ(s.next()->first, running);
  EXPECT_EQ(s.cancel(queued), JobState::Cancelled);
  EXPECT_FALSE(fs::exists(d / "q")) << "a cancelled job's folder goes";
  EXPECT_THROW(s.cancel(queued), JobConflict);  // a double cancel
  EXPECT_TRUE(s.progress(running, 0.5));
  EXPECT_EQ(s.cancel(running), JobState::Running);  // asked; the worker stops it
  EXPECT_THROW(s.cancel(running), JobConflict);
  EXPECT_FALSE(s.progress(running, 0.6));
  s.cancelled(running);
  EXPECT_EQ(s.view(running).state, JobState::Cancelled);
  EXPECT_THROW(s.fetch(running), JobConflict);
  EXPECT_THROW(s.view("0123456789abcdef0123456789abcdef"), UnknownJob);
  EXPECT_EQ(s.counts().ended.at(JobState::Cancelled), 2);
}

TEST(ServeJobs, AResultStaysUntilFetchedPlusItsTimeToLive) {
  test::TempDir d("jobs");
  JobStore s({4, 0, 10, 100});
  const std::string fetched = queue_one(s, d, "f"), unfetched = queue_one(s, d, "u"), failed = queue_one(s, d, "x");
  const auto t0 = JobStore::Clock::now();
  for (const std::string& id : {fetched, unfetched}) {
    s.next();
    s.done(id, d / (id == fetched ? "f/r" : "u/r"), {}, "");
  }
  s.next();
  s.failed(failed, "bad input");
  EXPECT_EQ(s.view(failed).error, "bad input");
  s.fetch(fetched);
  EXPECT_EQ(s.expire(t0 + std::chrono::seconds(5)), 0);
  EXPECT_EQ(s.expire(t0 + std::chrono::seconds(11)), 2);  // fetched + 10 s, and the failed job's record
  EXPECT_THROW(s.view(fetched), UnknownJob);
  EXPECT_FALSE(fs::exists(d / "f"));
  EXPECT_EQ(s.view(unfetched).state, JobState::Done);  // nobody fetched it: it waits for the longer TTL
  EXPECT_EQ(s.expire(t0 + std::chrono::seconds(101)), 1);
  EXPECT_FALSE(fs::exists(d / "u"));
}

TEST(ServeJobs, ClosingCancelsTheQueueAndStopsTheWorkersLoop) {
  test::TempDir d("jobs");
  JobStore s({4, 0, 600, 86400});
  const std::string a = queue_one(s, d, "a"), b = queue_one(s, d, "b");
  s.next();
  s.close();
  EXPECT_EQ(s.view(b).state, JobState::Cancelled);
  EXPECT_FALSE(s.next());  // the worker's loop ends
  EXPECT_THROW(s.reserve(1), QueueFull);
  EXPECT_FALSE(s.wait_idle(JobStore::Clock::now() + std::chrono::milliseconds(20)));  // a still runs
  s.stop_running();
  EXPECT_FALSE(s.progress(a, 0.1));
  s.cancelled(a);
  EXPECT_TRUE(s.wait_idle(JobStore::Clock::now()));
}

TEST(ServeAuth, TheBearerTokenMustMatchExactly) {
  const std::string t = "0123456789abcdef";
  EXPECT_TRUE(bearer_matches("Bearer 0123456789abcdef", t));
  EXPECT_FALSE(bearer_matches("Bearer 0123456789abcdeF", t));
  EXPECT_FALSE(bearer_matches("Bearer 0123456789abcde", t));
  EXPECT_FALSE(bearer_matches("Bearer 0123456789abcdef0", t));
  EXPECT_FALSE(bearer_matches("bearer 0123456789abcdef", t));
  EXPECT_FALSE(bearer_matches("", t));
}

TEST(ServeAuth, ATokenFileMustBePrivateAndHoldALongToken) {
  test::TempDir d("tok");
  const std::string f = d / "t";
  std::ofstream(f) << "  a-long-enough-token-value \nsecond line\n";
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(read_token_file(f), "a-long-enough-token-value");
  fs::permissions(f, fs::perms::others_read, fs::perm_options::add);
  EXPECT_THROW(read_token_file(f), FileError);
  std::ofstream(d / "short") << "short\n";
  fs::permissions(d / "short", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_THROW(read_token_file(d / "short"), FileError);
  EXPECT_THROW(read_token_file(d / "missing"), FileError);
}

TEST(ServeUpload, AnUploadsKindComesFromItsBytes) {
  const char gz[] = {'\x1f', '\x8b', 8, 0};
  EXPECT_EQ(sniff_extension(gz, 4), ".nii.gz");
  EXPECT_EQ(sniff_extension("PK\x03\x04rest", 8), ".zip");
  std::string nii(352, '\0');
  nii.replace(344, 4, std::string("n+1\0", 4));
  EXPECT_EQ(sniff_extension(nii.data(), nii.size()), ".nii");
  EXPECT_EQ(sniff_extension("GIF89a", 6), "");
  EXPECT_EQ(sniff_extension(nii.data(), 300), "");  // too short to hold the magic
}

TEST(ServeUpload, PartsBecomeNumberedFilesAndTheSizeIsBounded) {
  test::TempDir d("up");
  {
    UploadWriter w(d.path(), 1000);
    const char gz[] = {'\x1f', '\x8b', 1, 2, 3};
    w.begin_part();
    ASSERT_TRUE(w.write(gz, 5));
    w.begin_part();
    ASSERT_TRUE(w.write("PK\x03\x04zz", 6));
    const auto files = w.finish();
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(fs::path(files[0]).filename(), "case_0000.nii.gz");
    EXPECT_EQ(fs::path(files[1]).filename(), "case_0001.zip");
    EXPECT_EQ(fs::file_size(files[0]), 5u);
  }
  test::TempDir e("up");
  UploadWriter big(e.path(), 8);
  EXPECT_FALSE(big.write("0123456789", 10));
  EXPECT_TRUE(big.too_large());
  test::TempDir g("up");
  UploadWriter garbage(g.path(), 100);
  garbage.write("hello", 5);
  EXPECT_THROW(garbage.finish(), Error);
}

TEST(ServeOptions, ANonLoopbackHostNeedsATokenAndNamesMustBeUsable) {
  ServeOptions o;
  o.models = {{default_model_name("/r/Dataset001_A/nnUNetTrainer__nnUNetPlans__3d_fullres/"), "/r/x"}};
  EXPECT_EQ(o.models[0].name, "Dataset001_A/nnUNetTrainer__nnUNetPlans__3d_fullres");
  EXPECT_EQ(check_options(o), "");
  o.host = "0.0.0.0";
  EXPECT_NE(check_options(o).find("needs --token_file"), std::string::npos);
  o.token = "0123456789abcdef";
  EXPECT_EQ(check_options(o), "");
  o.models.push_back({"Dataset001_A/nnUNetTrainer__nnUNetPlans__3d_fullres", "/r/y"});
  EXPECT_NE(check_options(o).find("two models are named"), std::string::npos);
  o.models.back().name = "../etc";
  EXPECT_NE(check_options(o).find("model name"), std::string::npos);
  EXPECT_TRUE(is_loopback("127.0.0.1") && is_loopback("::1") && is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("10.0.0.1") || is_loopback("0.0.0.0") || is_loopback("::"));
}

TEST(ServeMetrics, TheTextIsPrometheusExpositionFormat) {
  StoreCounts c;
  c.current = {{JobState::Queued, 2}, {JobState::Running, 1}};
  c.ended = {{JobState::Done, 5}};
  c.run_seconds_sum = 12.5;
  c.run_count = 5;
  const std::string t = prometheus_text(c, 2, 1 << 20, 3);
  // Every line: a comment (# HELP / # TYPE) or `name{labels} value` (text format 0.0.4).
  static const std::regex sample("^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{[a-z_]+=\"[a-z]+\"\\})? -?[0-9.e+]+$");
  std::istringstream lines(t);
  for (std::string line; std::getline(lines, line);)
    EXPECT_TRUE(line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0 || std::regex_match(line, sample))
        << line;
  EXPECT_NE(t.find("medseg_serve_queue_length 2\n"), std::string::npos);
  EXPECT_NE(t.find("medseg_serve_jobs{state=\"running\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("medseg_serve_jobs_ended_total{state=\"failed\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("medseg_serve_job_seconds_sum 12.5\n"), std::string::npos);
  EXPECT_NE(t.find("process_resident_memory_bytes 1048576\n"), std::string::npos);
  EXPECT_GT(resident_bytes(), 0);
}

TEST(ServeConnections, ThePoolGrowsToItsBoundAndRunsEveryConnection) {
  std::atomic<int> ran{0}, running{0}, most{0};
  std::atomic<bool> go{false};
  {
    ConnectionThreads pool(4);
    for (int i = 0; i < 12; ++i)
      pool.enqueue([&] {
        const int now = ++running;
        for (int m = most; now > m && !most.compare_exchange_weak(m, now);) {}
        while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        --running;
        ++ran;
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(pool.threads(), 4u);
    EXPECT_EQ(most.load(), 4);  // the rest wait their turn
    go = true;
  }  // shutdown runs what is queued
  EXPECT_EQ(ran.load(), 12);
}

TEST(ServeConnections, IdleThreadsLeaveDownToTheKeptFew) {
  ConnectionThreads pool(16, std::chrono::milliseconds(50), 2);
  std::atomic<bool> go{false};
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i)
    pool.enqueue([&] {
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++ran;
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(pool.threads(), 10u);
  go = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  pool.enqueue([&] { ++ran; });  // reaps the threads that left
  EXPECT_LE(pool.threads(), 3u);
  pool.shutdown();
  EXPECT_EQ(ran.load(), 11);
}
