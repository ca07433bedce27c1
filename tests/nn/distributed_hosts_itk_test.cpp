// Training across hosts (docs/distributed.md), against independent facts: the loopback run of the
// same two ranks (medseg_train --nproc_per_node 2), the clock, and the files left behind. Ranks are
// started torchrun style with the five variables only; "hosts" are two network namespaces joined by
// a veth pair (root and `ip netns`; those tests skip otherwise). Every join failure and the link cut
// must end within the one bound docs/distributed.md gives: --dist-timeout (5 s here) from the start
// of the join or of the fault, plus the process's own start and exit (kSlack).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json_io.h"
#include "distributed/launch.h"
#include "distributed_hosts_support.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;
using test::TwoHosts;

namespace {

constexpr int kTimeout = 5;   // --dist-timeout of these tests
constexpr double kSlack = 4;  // a rank's start (LibTorch loads) and exit, on a loaded 2-core machine

// Raw dataset 955 -> plans -> preprocessed 3d_fullres, with the plans copies and splits_final.json the
// tests use. Every test is a process of its own: the dataset is made once per build, under a lock, in
// build/test_cache/ (renamed into place when complete), and nothing writes into it afterwards.
struct HostsDataset {
  std::string root;
  HostsDataset() {
    const fs::path cache = fs::path(test::bin_dir()) / ".." / "test_cache";
    const auto stamp =
        fs::last_write_time(fs::path(test::bin_dir()) / "medseg_plan_and_preprocess").time_since_epoch().count();
    root = (cache / ("hosts955_" + std::to_string(stamp))).string();
    if (fs::exists(root + "/ready")) return;
    fs::create_directories(cache);
    const int lock = ::open((cache / "hosts955.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock < 0 || ::flock(lock, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + cache.string());
    try {
      if (!fs::exists(root + "/ready")) make();
    } catch (...) {
      ::close(lock);
      throw;
    }
    ::close(lock);
  }
  void make() const {
    for (const auto& e : fs::directory_iterator(fs::path(root).parent_path()))  // other builds' copies
      if (e.is_directory() && e.path().filename().string().rfind("hosts955_", 0) == 0) fs::remove_all(e.path());
    const std::string tmp = root + ".tmp";
    fs::create_directories(tmp + "/raw");
    auto r = test::run_cli("medseg_make_dataset",
                           "-d 955 -n Hosts --cases 5 --min-shape 12 20 20 --max-shape 13 21 21 --seed 3",
                           "MEDSEG_RAW=" + tmp + "/raw");
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    r = test::run_cli("medseg_plan_and_preprocess", "-d 955 -c 3d_fullres --np 2 --no_pbar",
                      "MEDSEG_RAW=" + tmp + "/raw MEDSEG_PREPROCESSED=" + tmp + "/pre");
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    const fs::path folder = fs::path(tmp) / "pre" / "Dataset955_Hosts";
    const json plans = read_json((folder / "nnUNetPlans.json").string());
    const auto variant = [&](const std::string& name, int batch, const std::vector<int>& patch, bool swin) {
      json p = plans;
      p["plans_name"] = name;
      auto& c = p["configurations"]["3d_fullres"];
      c["batch_size"] = batch;
      if (!patch.empty()) c["patch_size"] = patch;
      // SwinUNETR, which cannot be split into slabs.
      if (swin)
        c["architecture"] = {{"network_class_name", "medseg.SwinUNETR"},
                             {"arch_kwargs", {{"feature_size", 12}, {"spatial_dims", 3}}}};
      write_json((folder / (name + ".json")).string(), p);
    };
    for (int b : {1, 2, 4}) variant(plan_name(b, {}), b, {}, false);
    variant(plan_name(1, {10, 20, 20}), 1, {10, 20, 20}, false);
    variant("SwinPlans", 1, {32, 32, 32}, true);
    // Five folds of one validation case each, written now so that no test writes into the cache.
    std::vector<std::string> ids;
    for (const auto& e : fs::directory_iterator(folder / "nnUNetPlans_3d_fullres"))
      if (e.path().extension() == ".json" && fs::exists(fs::path(e.path()).replace_extension(".npy")))
        ids.push_back(e.path().stem().string());  // a case: CASE.json beside CASE.npy (not the folder's record)
    std::sort(ids.begin(), ids.end());
    json splits = json::array();
    for (size_t k = 0; k < ids.size(); ++k) {
      json train = json::array();
      for (size_t i = 0; i < ids.size(); ++i)
        if (i != k) train.push_back(ids[i]);
      splits.push_back({{"train", train}, {"val", json::array({ids[k]})}});
    }
    write_json((folder / "splits_final.json").string(), splits, 4);
    std::ofstream(tmp + "/ready") << "ok\n";
    fs::rename(tmp, root);
  }
  static std::string plan_name(int batch, const std::vector<int>& patch) {
    std::string name = "B" + std::to_string(batch) + "Plans";
    for (int v : patch) name += "_" + std::to_string(v);
    return name;
  }
  std::string plans(int batch, const std::vector<int>& patch = {}) const { return plan_name(batch, patch); }
  std::string swin_plans() const { return "SwinPlans"; }
  std::string pre() const { return root + "/pre"; }
};

const HostsDataset& hosts_dataset() {
  static HostsDataset d;
  return d;
}

std::string hosts_env(const std::string& results, const std::string& pre = hosts_dataset().pre()) {
  return "MEDSEG_PREPROCESSED=" + pre + " MEDSEG_RESULTS=" + results;
}

std::string train_args(const std::string& plans, const std::string& more) {
  return "955 3d_fullres 0 -p " + plans + " " + more +
         " --val-iters-per-epoch 1 --num-workers 0 --threads 1 --deterministic --no_pbar --dist-timeout " +
         std::to_string(kTimeout);
}

std::string train(const std::string& env_vars, const std::string& args) {
  return "env " + env_vars + " " + test::bin_dir() + "/medseg_train " + args;
}

std::string fold(const std::string& results, const std::string& plans) {
  return results + "/Dataset955_Hosts/nnUNetTrainer__" + plans + "__3d_fullres/fold_0";
}

int lines_of(const std::string& text) {
  int n = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) n += l.empty() ? 0 : 1;
  return n;
}

// The loopback reference: the same two ranks started by medseg_train --nproc_per_node 2.
std::string loopback_run(const std::string& results, const std::string& plans, const std::string& more) {
  const auto r = test::run_cli("medseg_train", train_args(plans, more) + " --nproc_per_node 2", hosts_env(results));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return fold(results, plans) + "/checkpoint_final.ckpt";
}

void expect_identical(const std::string& a, const std::string& b) {
  const auto r = test::run_cli("medseg_checkpoint", "diff " + a + " " + b + " --rtol 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Ranks 0 and 1 on loopback, started with WORLD_SIZE world0 and world1, each waited for (60 s at most).
struct TwoRankRun {
  int status[2];
  double took[2] = {0, 0};  // rank 1's: counted from the moment rank 0 had exited
  std::string log[2];
};
TwoRankRun run_two_loopback_ranks(const test::TempDir& d, int world0, int world1) {
  test::Processes procs;
  const int port = distributed::free_loopback_port();
  const std::string args = train_args(hosts_dataset().plans(4), "--epochs 1 --iters-per-epoch 1");
  const int world[2] = {world0, world1};
  pid_t pid[2];
  for (int r = 0; r < 2; ++r)
    pid[r] = procs.start(train(hosts_env(d / "res") + " " + test::torchrun_env(r, world[r], "127.0.0.1", port), args),
                         d / ("rank" + std::to_string(r) + ".log"));
  TwoRankRun run;
  for (int r = 0; r < 2; ++r) run.status[r] = test::wait_exit(pid[r], std::chrono::seconds(60), &run.took[r]);
  for (int r = 0; r < 2; ++r) run.log[r] = test::read_text(d / ("rank" + std::to_string(r) + ".log"));
  return run;
}

}  // namespace

// --- joining: every failure ends within --dist-timeout, naming the rank ----------------------------

TEST(DistributedJoin, MasterUnreachableEndsWithinTheTimeoutNamingRank0) {
  test::TempDir d("join_master");
  test::Processes procs;
  const int port = distributed::free_loopback_port();  // nobody serves it
  const pid_t r1 = procs.start(train(hosts_env(d / "res") + " " + test::torchrun_env(1, 2, "127.0.0.1", port),
                                     train_args(hosts_dataset().plans(2), "--epochs 1 --iters-per-epoch 1")),
                               d / "rank1.log");
  double took = 0;
  const int status = test::wait_exit(r1, std::chrono::seconds(60), &took);
  const std::string log = test::read_text(d / "rank1.log");
  EXPECT_NE(status, 0) << log;
  EXPECT_NE(status, -1) << "still running after 60 s";
  EXPECT_LT(took, kTimeout + kSlack) << log;
  EXPECT_NE(log.find("rank 1 of 2: cannot reach rank 0's rendezvous on 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << log;
  std::printf("master unreachable: rank 1 exited %d after %.2f s\n", status, took);
}

TEST(DistributedJoin, MissingRankIsNamedWithinTheTimeout) {
  test::TempDir d("join_missing");
  // World size 3, ranks 0 and 1 started: rank 2 never arrives.
  const auto run = run_two_loopback_ranks(d, 3, 3);
  const int s0 = run.status[0], s1 = run.status[1];
  const double took0 = run.took[0], took1 = run.took[1];
  const std::string &log0 = run.log[0], &log1 = run.log[1];
  EXPECT_NE(s0, 0) << log0;
  EXPECT_NE(s1, 0) << log1;
  EXPECT_LT(took0, kTimeout + kSlack) << log0;
  EXPECT_LT(took0 + took1, kTimeout + kSlack) << log1;  // rank 1 waited at most for rank 0 to give up
  EXPECT_NE(log0.find("rank 0 of 3: rank 2 of 3 did not join within 5 s"), std::string::npos) << log0;
  EXPECT_NE(log1.find("rank 1 of 3: "), std::string::npos) << log1;
  EXPECT_FALSE(fs::exists(d / "res/Dataset955_Hosts"));
  std::printf("missing rank: rank 0 exited %d after %.2f s, rank 1 %d after %.2f s more\n", s0, took0, s1, took1);
}

TEST(DistributedJoin, WrongWorldSizeIsNamedAtOnce) {
  test::TempDir d("join_size");
  const auto run = run_two_loopback_ranks(d, 2, 3);
  const int s0 = run.status[0], s1 = run.status[1];
  const double took0 = run.took[0], took1 = run.took[1];
  const std::string &log0 = run.log[0], &log1 = run.log[1];
  EXPECT_NE(s0, 0) << log0;
  EXPECT_NE(s1, 0) << log1;
  EXPECT_LT(took0, kTimeout + kSlack) << log0;
  EXPECT_LT(took0 + took1, kTimeout + kSlack) << log1;
  EXPECT_NE(log0.find("rank 0 of 2: rank 1 was started with WORLD_SIZE=3, this rank with WORLD_SIZE=2"),
            std::string::npos)
      << log0;
  EXPECT_NE(log1.find("rank 1 of 3: "), std::string::npos) << log1;
  std::printf("wrong world size: rank 0 exited %d after %.2f s, rank 1 %d after %.2f s more\n", s0, took0, s1, took1);
}

TEST(DistributedJoin, LoneRankWhoseWorldSizeCannotWorkSaysSoAtOnce) {
  test::TempDir d("join_lone");
  test::Processes procs;
  const int port = distributed::free_loopback_port();
  // Batch 1 cannot be shared by 2 ranks: said before waiting for rank 1, not after the timeout.
  const pid_t r0 = procs.start(train(hosts_env(d / "res") + " " + test::torchrun_env(0, 2, "127.0.0.1", port),
                                     train_args(hosts_dataset().plans(1), "--epochs 1 --iters-per-epoch 1")),
                               d / "rank0.log");
  double took = 0;
  const int status = test::wait_exit(r0, std::chrono::seconds(60), &took);
  const std::string log = test::read_text(d / "rank0.log");
  EXPECT_EQ(status, 1) << log;
  EXPECT_LT(took, kTimeout) << log;
  EXPECT_NE(log.find("the plan's batch size 1 is smaller than the 2 ranks"), std::string::npos) << log;
  EXPECT_EQ(lines_of(log), 1) << log;
}

// --- refusals the launcher makes once, before it starts any rank ------------------------------------

struct RefusalRow {
  std::string name;
  std::string plans;  // "batch1", "unsplittable" (batch 1, a patch with no slab-aligned axis), "swin"
  std::string flags;
  std::string message;
};
void PrintTo(const RefusalRow& r, std::ostream* os) { *os << r.name; }
class DistributedRefusal : public ::testing::TestWithParam<RefusalRow> {};

TEST_P(DistributedRefusal, OneLineBeforeAnyRankStarts) {
  const auto& row = GetParam();
  test::TempDir d("refuse");
  // 10x20x20 with strides (1,1,1) (2,2,2) (1,2,2): no axis splits into two slabs aligned with them
  // (5 is not a multiple of 2, 10 not of 4).
  const std::string plans = row.plans == "swin"           ? hosts_dataset().swin_plans()
                            : row.plans == "unsplittable" ? hosts_dataset().plans(1, {10, 20, 20})
                                                          : hosts_dataset().plans(1);
  const auto r = test::run_cli("medseg_train", train_args(plans, "--epochs 1 --iters-per-epoch 1") + " " + row.flags,
                               hosts_env(d / "res"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("medseg_train: error: " + row.message), std::string::npos) << r.output;
  EXPECT_EQ(lines_of(r.output), 1) << r.output;  // not once per rank, and no "rank 0 exited with status 1"
  EXPECT_FALSE(fs::exists(d / "res/Dataset955_Hosts"));
}

INSTANTIATE_TEST_SUITE_P(
    Rows, DistributedRefusal,
    ::testing::Values(RefusalRow{"batch_smaller_than_ranks", "batch1", "--nproc_per_node 2",
                                 "the plan's batch size 1 is smaller than the 2 ranks"},
                      RefusalRow{"patch_without_slab_axis", "unsplittable", "--spatial_parallel 2",
                                 "--spatial_parallel 2: no axis of the patch 10x20x20 splits into that many slabs"},
                      RefusalRow{"swin_with_spatial_parallel", "swin", "--spatial_parallel 2",
                                 "--spatial_parallel: SwinUNETR cannot be split into slabs"}),
    [](const auto& row_info) { return row_info.param.name; });

// A refusal only the ranks can make (here: a missing -pretrained_weights file, which every rank reads)
// reaches the user once, as the rank wrote it, through the launcher (distributed/launch.h).
TEST(DistributedRefusal, ARefusalEveryRankMakesIsPrintedOnce) {
  test::TempDir d("refuse_inrank");
  const auto r = test::run_cli("medseg_train",
                               train_args(hosts_dataset().plans(2), "--epochs 1 --iters-per-epoch 1") +
                                   " --nproc_per_node 2 --pretrained_weights " + (d / "missing.ckpt"),
                               hosts_env(d / "res"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  int errors = 0;
  std::istringstream in(r.output);
  for (std::string l; std::getline(in, l);) errors += l.find(": error: ") != std::string::npos ? 1 : 0;
  EXPECT_EQ(errors, 1) << r.output;
  EXPECT_NE(r.output.find("medseg_train: error: " + (d / "missing.ckpt") + ": file not found"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("exited with status"), std::string::npos) << r.output;
}

TEST(DistributedRefusal, WorldSizeOtherThanSpatialParallelAtOnce) {
  test::TempDir d("refuse_ws");
  const int port = distributed::free_loopback_port();
  const std::string args =
      train_args(hosts_dataset().plans(1), "--epochs 1 --iters-per-epoch 1") + " --spatial_parallel 2";
  const auto start = std::chrono::steady_clock::now();
  const auto r =
      test::run_cli("medseg_train", args, hosts_env(d / "res") + " " + test::torchrun_env(0, 3, "127.0.0.1", port));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--spatial_parallel 2 needs exactly that many ranks (3 in this run)"), std::string::npos)
      << r.output;
  EXPECT_EQ(lines_of(r.output), 1) << r.output;
  EXPECT_LT(took, kTimeout) << r.output;
}

// --- each rank's data: the same bytes, or a refusal naming the rank and the case ------------------

TEST(DistributedData, RankWithZeroedImagesIsRefusedNamingTheCase) {
  test::TempDir d("data_zero");
  const std::string plans = hosts_dataset().plans(2);
  // Host 1's copy: one case's image replaced by zeros of the same size (same shapes, same header).
  fs::copy(hosts_dataset().pre(), d / "pre1", fs::copy_options::recursive);
  const fs::path data = fs::path(d / "pre1") / "Dataset955_Hosts" / "nnUNetPlans_3d_fullres";
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(data))
    if (e.path().extension() == ".json" && fs::exists(fs::path(e.path()).replace_extension(".npy")))
      ids.push_back(e.path().stem().string());
  std::sort(ids.begin(), ids.end());
  ASSERT_FALSE(ids.empty());
  const std::string victim = ids.back();
  {
    const std::string npy = (data / (victim + ".npy")).string();
    std::string bytes = test::read_text(npy);
    const size_t header = bytes.find('\n') + 1;  // the .npy header ends with its first newline
    std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end(), '\0');
    std::ofstream(npy, std::ios::binary | std::ios::trunc) << bytes;
  }
  test::Processes procs;
  const int port = distributed::free_loopback_port();
  const std::string args = train_args(plans, "--epochs 1 --iters-per-epoch 1");
  const pid_t r0 = procs.start(train(hosts_env(d / "res") + " " + test::torchrun_env(0, 2, "127.0.0.1", port), args),
                               d / "rank0.log");
  const pid_t r1 =
      procs.start(train(hosts_env(d / "res", d / "pre1") + " " + test::torchrun_env(1, 2, "127.0.0.1", port), args),
                  d / "rank1.log");
  const int s0 = test::wait_exit(r0, std::chrono::seconds(90));
  const int s1 = test::wait_exit(r1, std::chrono::seconds(30));
  const std::string log0 = test::read_text(d / "rank0.log"), log1 = test::read_text(d / "rank1.log");
  EXPECT_EQ(s0, 1) << log0;
  EXPECT_EQ(s1, 1) << log1;
  const std::string says = "rank 1 trains on other data than rank 0: case '" + victim + "' differs";
  EXPECT_NE(log0.find(says), std::string::npos) << log0;
  EXPECT_NE(log1.find(says), std::string::npos) << log1;
  EXPECT_FALSE(fs::exists(fold(d / "res", plans) + "/checkpoint_final.ckpt"));
}

// --- two hosts: network namespaces joined by a veth pair ----------------------------------------

namespace {

// Both ranks of a two-host run: rank 0 on host 0 (the master), rank 1 on host 1. `pre1`: host 1's
// preprocessed root.
struct HostRun {
  pid_t rank[2] = {-1, -1};
};
HostRun start_on_hosts(const TwoHosts& hosts, test::Processes& procs, const std::string& dir,
                       const std::string& results, const std::string& args, int port,
                       const std::string& pre1 = hosts_dataset().pre(), const std::string& tag = "") {
  HostRun run;
  for (int h = 0; h < 2; ++h)
    run.rank[h] = procs.start(hosts.on(h, hosts_env(results, h == 0 ? hosts_dataset().pre() : pre1) + " " +
                                              test::torchrun_env(h, 2, TwoHosts::address(0), port) + " " +
                                              test::bin_dir() + "/medseg_train " + args),
                              dir + "/rank" + std::to_string(h) + tag + ".log");
  return run;
}

void expect_both_succeed(const HostRun& run, const std::string& dir, const std::string& tag = "") {
  for (int h = 0; h < 2; ++h) {
    const int s = test::wait_exit(run.rank[h], std::chrono::seconds(h == 0 ? 120 : 30));
    EXPECT_EQ(s, 0) << test::read_text(dir + "/rank" + std::to_string(h) + tag + ".log");
  }
}

}  // namespace

TEST(DistributedHosts, TwoHostsTrainLikeLoopback) {
  if (!test::can_make_namespaces()) GTEST_SKIP() << "needs root and `ip netns`";
  TwoHosts hosts;
  ASSERT_TRUE(hosts.ok()) << "could not make the two namespaces";
  test::Processes procs;
  test::TempDir d("hosts_eq");
  const std::string plans = hosts_dataset().plans(2);
  const std::string more = "--epochs 1 --iters-per-epoch 2";
  const std::string loop = loopback_run(d / "loop", plans, more);
  const HostRun run = start_on_hosts(hosts, procs, d.path(), d / "res", train_args(plans, more), 29500);
  expect_both_succeed(run, d.path());
  // Each rank told the other its end of the link, not loopback (nothing set but the five variables).
  EXPECT_NE(test::read_text(d / "rank0.log").find("Gloo on 10.78.0.1"), std::string::npos)
      << test::read_text(d / "rank0.log");
  expect_identical(loop, fold(d / "res", plans) + "/checkpoint_final.ckpt");
}

TEST(DistributedHosts, EachHostReadingItsOwnCopyTrainsLikeLoopback) {
  if (!test::can_make_namespaces()) GTEST_SKIP() << "needs root and `ip netns`";
  TwoHosts hosts;
  ASSERT_TRUE(hosts.ok()) << "could not make the two namespaces";
  test::Processes procs;
  test::TempDir d("hosts_copy");
  const std::string plans = hosts_dataset().plans(2);
  const std::string more = "--epochs 1 --iters-per-epoch 2";
  const std::string loop = loopback_run(d / "loop", plans, more);
  // Host 1 reads its own copy (a copy of the same bytes: the digest check passes).
  fs::copy(hosts_dataset().pre(), d / "pre1", fs::copy_options::recursive);
  const HostRun run = start_on_hosts(hosts, procs, d.path(), d / "res", train_args(plans, more), 29500, d / "pre1");
  expect_both_succeed(run, d.path());
  expect_identical(loop, fold(d / "res", plans) + "/checkpoint_final.ckpt");
}

TEST(DistributedHosts, LinkCutStopsBothRanksWithinTheTimeoutAndTheRunResumes) {
  if (!test::can_make_namespaces()) GTEST_SKIP() << "needs root and `ip netns`";
  TwoHosts hosts;
  ASSERT_TRUE(hosts.ok()) << "could not make the two namespaces";
  test::Processes procs;
  test::TempDir d("hosts_cut");
  const std::string plans = hosts_dataset().plans(2);
  const std::string args = train_args(plans, "--epochs 3 --iters-per-epoch 3 --checkpoint-every 1");
  const HostRun run = start_on_hosts(hosts, procs, d.path(), d / "res", args, 29500);
  // Cut as soon as epoch 0's checkpoint is there: epoch 1 is under way (its all-reduces need the link).
  const std::string latest = fold(d / "res", plans) + "/checkpoint_latest.ckpt";
  ASSERT_TRUE(test::wait_for_file(latest, "", std::chrono::seconds(120))) << test::read_text(d / "rank0.log");
  ASSERT_TRUE(hosts.cut());
  double took[2] = {0, 0};
  int status[2];
  for (int h = 0; h < 2; ++h) status[h] = test::wait_exit(run.rank[h], std::chrono::seconds(60), &took[h]);
  took[1] += took[0];  // both measured from the cut
  for (int h = 0; h < 2; ++h) {
    const std::string log = test::read_text(d / ("rank" + std::to_string(h) + ".log"));
    EXPECT_EQ(status[h], 1) << log;
    EXPECT_LT(took[h], kTimeout + kSlack) << log;
    const std::string other = "rank " + std::to_string(1 - h) + " exited or did not answer within 5 s";
    EXPECT_NE(log.find("rank " + std::to_string(h) + " of 2: "), std::string::npos) << log;
    EXPECT_NE(log.find(other), std::string::npos) << log;
  }
  std::printf("link cut: rank 0 exited %d after %.2f s, rank 1 %d after %.2f s\n", status[0], took[0], status[1],
              took[1]);
  ASSERT_FALSE(fs::exists(fold(d / "res", plans) + "/checkpoint_final.ckpt"));
  const auto info = test::run_cli("medseg_checkpoint", "info " + latest);
  ASSERT_EQ(info.exit_code, 0) << info.output;
  // Link back: the same command with --c goes on from checkpoint_latest and finishes.
  ASSERT_TRUE(hosts.restore());
  const HostRun again =
      start_on_hosts(hosts, procs, d.path(), d / "res", args + " --c", 29501, hosts_dataset().pre(), "_c");
  expect_both_succeed(again, d.path(), "_c");
  EXPECT_NE(test::read_text(d / "rank0_c.log").find("resumed from checkpoint_latest"), std::string::npos)
      << test::read_text(d / "rank0_c.log");
  EXPECT_TRUE(fs::exists(fold(d / "res", plans) + "/checkpoint_final.ckpt"));
}
