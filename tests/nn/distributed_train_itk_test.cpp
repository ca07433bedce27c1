// Data-parallel training on 2 Gloo ranks over loopback, against independent facts: a single-process
// run on the whole batch (the reference), checkpoints compared with `medseg_checkpoint diff --rtol`,
// and exit codes, messages and files for the faults and bad inputs of docs/distributed.md.
//
// Why most comparisons run with lr 1e-12: the equality is about gradients. With a real learning
// rate, float32 summation order (two ranks add the batch in two halves) makes the weights after one
// step differ in the last bit, and on these tiny networks a last-bit change of the weights moves the
// next gradients by up to 1e-3 (measured; a single process with --threads 2 against 1 drifts the same
// way). At lr 1e-12 the weights stay bit-identical while the momentum buffers accumulate three
// iterations of gradients (three different batches), which is what is compared.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/json_io.h"
#include "distributed/launch.h"
#include "training/progress_plot.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

const char* kModel = "Dataset953_Tiny/nnUNetTrainer__";

// Raw dataset 953 -> plans -> preprocessed 3d_fullres, once for the file; then one plans file per
// (batch size, batch Dice) pair, sharing the preprocessed data (same data_identifier).
struct DistDataset {
  test::TempDir dir{"ddp"};
  DistDataset() {
    fs::create_directories(dir / "raw");
    auto r = test::run_cli("medseg_make_dataset",
                           "-d 953 -n Tiny --cases 6 --min-shape 12 20 20 --max-shape 14 22 22 --seed 5",
                           "MEDSEG_RAW=" + (dir / "raw"));
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    r = test::run_cli("medseg_plan_and_preprocess", "-d 953 -c 3d_fullres --np 2 --no_pbar",
                      "MEDSEG_RAW=" + (dir / "raw") + " MEDSEG_PREPROCESSED=" + (dir / "pre"));
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    std::ofstream(dir / "tiny_lr.json") << R"({"name": "nnUNetTrainer", "optimizer": {"type": "SGD", "lr": 1e-12,
      "weight_decay": 0, "momentum": 0.99, "nesterov": true}})";
  }
  std::string plans(int batch, bool batch_dice) const {
    const std::string name = "B" + std::to_string(batch) + (batch_dice ? "bd" : "") + "Plans";
    const fs::path folder = fs::path(dir / "pre") / "Dataset953_Tiny";
    if (!fs::exists(folder / (name + ".json"))) {
      json p = read_json((folder / "nnUNetPlans.json").string());
      p["plans_name"] = name;
      p["configurations"]["3d_fullres"]["batch_size"] = batch;
      p["configurations"]["3d_fullres"]["batch_dice"] = batch_dice;
      write_json((folder / (name + ".json")).string(), p);
    }
    return name;
  }
};

const DistDataset& dist_dataset() {
  static DistDataset d;
  return d;
}

std::string dist_env(const std::string& results) {
  return "MEDSEG_PREPROCESSED=" + (dist_dataset().dir / "pre") + " MEDSEG_RESULTS=" + results;
}

const char* kFlags = " --val-iters-per-epoch 1 --num-workers 0 --threads 1 --deterministic --no_pbar --dist-timeout 30";

std::string dist_fold(const std::string& results, const std::string& plans) {
  return results + "/" + kModel + plans + "__3d_fullres/fold_0";
}

// `medseg_checkpoint diff A B --rtol 1e-5`: the atol floor covers conv biases that an instance norm
// follows (their true gradient is 0; what they hold is rounding noise, ~1e-8).
test::CmdResult same_within(const std::string& a, const std::string& b,
                            const std::string& tol = "--rtol 1e-5 --atol 5e-8") {
  return test::run_cli("medseg_checkpoint", "diff " + a + " " + b + " " + tol);
}

}  // namespace

// --- one process on the whole batch == 2 ranks on its halves -------------------------------------

struct EquivalenceRow {
  std::string name;
  int batch;
  bool batch_dice;
  std::string flags;  // iterations and trainer config
};
void PrintTo(const EquivalenceRow& r, std::ostream* os) { *os << r.name; }

class DataParallelEquivalence : public ::testing::TestWithParam<EquivalenceRow> {};

TEST_P(DataParallelEquivalence, TwoRanksEqualOneProcess) {
  const auto& row = GetParam();
  const std::string plans = dist_dataset().plans(row.batch, row.batch_dice);
  test::TempDir d("ddpeq");
  std::string flags = row.flags;
  if (const auto at = flags.find("{tiny_lr}"); at != std::string::npos)
    flags.replace(at, 9, dist_dataset().dir / "tiny_lr.json");
  const std::string args = "953 3d_fullres 0 -p " + plans + " --epochs 1 " + flags + kFlags;
  auto one = test::run_cli("medseg_train", args, dist_env(d / "one"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto two = test::run_cli("medseg_train", args + " --nproc_per_node 2", dist_env(d / "two"));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("2 ranks joined"), std::string::npos) << two.output;
  const auto r = same_within(dist_fold(d / "one", plans) + "/checkpoint_final.ckpt",
                             dist_fold(d / "two", plans) + "/checkpoint_final.ckpt");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Only rank 0 wrote: one training log, one metrics line, one validation summary over all cases.
  EXPECT_EQ(fs::exists(dist_fold(d / "two", plans) + "/progress.png"), training::progress_plot_available());
  EXPECT_EQ(test::read_text(dist_fold(d / "two", plans) + "/metrics.jsonl").find('\n'),
            test::read_text(dist_fold(d / "two", plans) + "/metrics.jsonl").rfind('\n'));
  const json s1 = read_json(dist_fold(d / "one", plans) + "/validation/summary.json");
  const json s2 = read_json(dist_fold(d / "two", plans) + "/validation/summary.json");
  EXPECT_EQ(s2["metric_per_case"].size(), s1["metric_per_case"].size());
}

INSTANTIATE_TEST_SUITE_P(
    Rows, DataParallelEquivalence,
    ::testing::Values(
        // Deep supervision (the nnUNetTrainer default; the zero-weighted head stays unused on both).
        EquivalenceRow{"deep_supervision_b4", 4, false, "--iters-per-epoch 3 --tr {tiny_lr}"},
        // Batch Dice pools tp/fp/fn over ranks; batch 3 gives the ranks 1 and 2 samples.
        EquivalenceRow{"batch_dice_uneven_b3", 3, true, "--iters-per-epoch 3 --tr {tiny_lr}"},
        // nnU-Net's learning rate, one step: the updated weights themselves agree.
        EquivalenceRow{"default_lr_one_step", 4, true, "--iters-per-epoch 1"}),
    [](const auto& row_info) { return row_info.param.name; });

// --- a checkpoint resumes with any number of ranks ----------------------------------------------

struct ResumeRow {
  std::string name;
  int first_ranks, second_ranks;
};
void PrintTo(const ResumeRow& r, std::ostream* os) { *os << r.name; }
class DataParallelResume : public ::testing::TestWithParam<ResumeRow> {};

TEST_P(DataParallelResume, ContinuesTheUninterruptedRun) {
  const auto& row = GetParam();
  const std::string plans = dist_dataset().plans(4, true);
  test::TempDir d("ddpres");
  const std::string args = "953 3d_fullres 0 -p " + plans + " --iters-per-epoch 2 --checkpoint-every 1 --tr " +
                           (dist_dataset().dir / "tiny_lr.json") + kFlags;
  const auto ranks = [](int n) { return n > 1 ? " --nproc_per_node " + std::to_string(n) : std::string(); };
  auto whole = test::run_cli("medseg_train", args + " --epochs 2", dist_env(d / "whole"));
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  // The first part stops after epoch 0, its final checkpoint renamed to what an interrupted run
  // leaves (epoch 0's poly learning rate is the initial one whatever the epoch count).
  auto half = test::run_cli("medseg_train", args + " --epochs 1" + ranks(row.first_ranks), dist_env(d / "half"));
  ASSERT_EQ(half.exit_code, 0) << half.output;
  const std::string h = dist_fold(d / "half", plans);
  fs::rename(h + "/checkpoint_final.ckpt", h + "/checkpoint_latest.ckpt");
  auto resumed =
      test::run_cli("medseg_train", args + " --epochs 2 --c" + ranks(row.second_ranks), dist_env(d / "half"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from checkpoint_latest"), std::string::npos) << resumed.output;
  const auto r = same_within(dist_fold(d / "whole", plans) + "/checkpoint_final.ckpt", h + "/checkpoint_final.ckpt");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Rows, DataParallelResume,
                         ::testing::Values(ResumeRow{"two_ranks_then_one", 2, 1}, ResumeRow{"one_rank_then_two", 1, 2}),
                         [](const auto& row_info) { return row_info.param.name; });

// --- torchrun style: ranks started by the caller with RANK, WORLD_SIZE, MASTER_ADDR/PORT ---------

namespace {

// One rank started torchrun style: `sh -c "exec env ... medseg_train ..."`, so the pid is the rank's.
pid_t spawn_rank(int rank, int port, const std::string& results, const std::string& args, const std::string& log) {
  const std::string cmd = "exec env " + dist_env(results) + " RANK=" + std::to_string(rank) +
                          " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(rank) +
                          " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + test::bin_dir() +
                          "/medseg_train " + args + " > " + log + " 2>&1";
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Waits for `pid` up to `limit`; its exit status (128 + signal), or -1 after killing it at the limit.
int wait_for(pid_t pid, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  int st = 0;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// The launcher's own choice of a free loopback port.
int free_port() { return distributed::free_loopback_port(); }

}  // namespace

TEST(DataParallelLaunch, EnvironmentLaunchEqualsNprocPerNode) {
  const std::string plans = dist_dataset().plans(4, false);
  test::TempDir d("ddpenv");
  const std::string args = "953 3d_fullres 0 -p " + plans + " --epochs 1 --iters-per-epoch 2" + std::string(kFlags);
  auto launched = test::run_cli("medseg_train", args + " --nproc_per_node 2", dist_env(d / "launcher"));
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  const int port = free_port();
  const pid_t r0 = spawn_rank(0, port, d / "env", args, d / "rank0.log");
  const pid_t r1 = spawn_rank(1, port, d / "env", args, d / "rank1.log");
  ASSERT_EQ(wait_for(r0, std::chrono::seconds(120)), 0) << test::read_text(d / "rank0.log");
  ASSERT_EQ(wait_for(r1, std::chrono::seconds(30)), 0) << test::read_text(d / "rank1.log");
  // The same two ranks doing the same sums in the same order: bit for bit.
  const auto r = same_within(dist_fold(d / "launcher", plans) + "/checkpoint_final.ckpt",
                             dist_fold(d / "env", plans) + "/checkpoint_final.ckpt", "--rtol 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// --- faults -----------------------------------------------------------------------------------

namespace {

// Waits until `file` holds `text` (or `limit` passes).
bool wait_for_text(const std::string& file, const std::string& text, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (test::read_text(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST(DataParallelFaults, KilledRankEndsTheOtherWithinTheTimeout) {
  const std::string plans = dist_dataset().plans(4, false);
  test::TempDir d("ddpkill");
  const std::string args = "953 3d_fullres 0 -p " + plans +
                           " --epochs 1 --iters-per-epoch 100000 --val-iters-per-epoch 1 "
                           "--num-workers 0 --threads 1 --no_pbar --dist-timeout 20 --verbose";
  const int port = free_port();
  const pid_t r0 = spawn_rank(0, port, d / "res", args, d / "rank0.log");
  const pid_t r1 = spawn_rank(1, port, d / "res", args, d / "rank1.log");
  ASSERT_TRUE(wait_for_text(d / "rank0.log", "network PlainConvUNet", std::chrono::seconds(60)))
      << test::read_text(d / "rank0.log");
  std::this_thread::sleep_for(std::chrono::seconds(2));  // inside the epoch
  kill(r1, SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  const int status = wait_for(r0, std::chrono::seconds(60));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  wait_for(r1, std::chrono::seconds(5));
  const std::string log = test::read_text(d / "rank0.log");
  EXPECT_NE(status, 0) << log;
  EXPECT_NE(status, -1) << "rank 0 still ran 60 s after rank 1 died";
  EXPECT_LT(took, 20 + 10) << log;
  EXPECT_NE(log.find("error: rank 0 of 2: "), std::string::npos) << "exit status " << status << "\n" << log;
  EXPECT_EQ(log.find("Exception raised from"), std::string::npos) << log;
}

TEST(DataParallelFaults, LauncherNamesTheDeadRankAndStopsTheOthers) {
  const std::string plans = dist_dataset().plans(4, false);
  test::TempDir d("ddplkill");
  const std::string cmd = "exec env " + dist_env(d / "res") + " " + test::bin_dir() +
                          "/medseg_train 953 3d_fullres 0 -p " + plans +
                          " --epochs 1 --iters-per-epoch 100000 --num-workers 0 --threads 1 --no_pbar "
                          "--dist-timeout 20 --nproc_per_node 2 > " +
                          (d / "launcher.log") + " 2>&1";
  const pid_t launcher = fork();
  if (launcher == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(wait_for_text(d / "launcher.log", "network PlainConvUNet", std::chrono::seconds(60)))
      << test::read_text(d / "launcher.log");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // The launcher's children, told apart by the RANK in their environment.
  const std::string children =
      test::read_text("/proc/" + std::to_string(launcher) + "/task/" + std::to_string(launcher) + "/children");
  pid_t rank0 = 0, rank1 = 0;
  std::istringstream ids(children);
  for (pid_t p; ids >> p;) {
    std::string envs = test::read_text("/proc/" + std::to_string(p) + "/environ");
    for (char& c : envs) c = c == '\0' ? '\n' : c;
    (envs.find("\nRANK=1\n") != std::string::npos ? rank1 : rank0) = p;
  }
  ASSERT_GT(rank1, 0) << children;
  ASSERT_GT(rank0, 0) << children;
  kill(rank1, SIGKILL);
  const int status = wait_for(launcher, std::chrono::seconds(60));
  const std::string log = test::read_text(d / "launcher.log");
  EXPECT_EQ(status, 128 + SIGKILL) << log;
  EXPECT_NE(log.find("medseg_train: rank 1 was killed by signal 9"), std::string::npos) << log;
  // Nothing left running.
  EXPECT_NE(kill(rank0, 0), 0) << "rank 0 still exists";
  // The last checkpoint written stays loadable (none was written in epoch 0: the folder has no torn file).
  for (const auto& e : fs::directory_iterator(dist_fold(d / "res", plans)))
    EXPECT_EQ(
        e.path().extension() == ".ckpt" ? test::run_cli("medseg_checkpoint", "info " + e.path().string()).exit_code : 0,
        0);
}

TEST(DataParallelFaults, CtrlCOnTheLauncherSavesOnceAndResumes) {
  const std::string plans = dist_dataset().plans(4, false);
  test::TempDir d("ddpint");
  const std::string base = "953 3d_fullres 0 -p " + plans +
                           " --epochs 2 --iters-per-epoch 100000 --num-workers 0 "
                           "--threads 1 --no_pbar --dist-timeout 20 --nproc_per_node 2";
  const std::string cmd = "exec env " + dist_env(d / "res") + " " + test::bin_dir() + "/medseg_train " + base + " > " +
                          (d / "launcher.log") + " 2>&1";
  const pid_t launcher = fork();
  if (launcher == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(wait_for_text(d / "launcher.log", "network PlainConvUNet", std::chrono::seconds(60)));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  kill(launcher, SIGINT);
  const int status = wait_for(launcher, std::chrono::seconds(60));
  const std::string log = test::read_text(d / "launcher.log");
  EXPECT_EQ(status, 130) << log;
  const std::string f = dist_fold(d / "res", plans);
  ASSERT_TRUE(fs::exists(f + "/checkpoint_latest.ckpt")) << log;
  EXPECT_EQ(test::run_cli("medseg_checkpoint", "info " + f + "/checkpoint_latest.ckpt").exit_code, 0);
  size_t saves = 0;
  for (auto p = log.find("saving checkpoint_latest"); p != std::string::npos;
       p = log.find("saving checkpoint_latest", p + 1))
    ++saves;
  EXPECT_EQ(saves, 1u) << log;
}

// --- bad input: one line, non-zero exit, nothing written ------------------------------------------

struct BadRow {
  std::string name;
  std::string env;    // extra environment
  std::string flags;  // extra flags
  std::string message;
};
void PrintTo(const BadRow& r, std::ostream* os) { *os << r.name; }
class DataParallelBadInput : public ::testing::TestWithParam<BadRow> {};

TEST_P(DataParallelBadInput, OneLineNothingWritten) {
  const auto& row = GetParam();
  test::TempDir d("ddpbad");
  std::string flags = row.flags;
  if (const auto at = flags.find("{plans1}"); at != std::string::npos)
    flags.replace(at, 8, dist_dataset().plans(1, false));
  const auto r = test::run_cli("medseg_train", "953 3d_fullres 0 --epochs 1 --iters-per-epoch 1" + flags + kFlags,
                               dist_env(d / "res") + " " + row.env);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(row.message), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Exception raised from"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "res" + "/Dataset953_Tiny")) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, DataParallelBadInput,
    ::testing::Values(BadRow{"world_size_without_rank", "WORLD_SIZE=2", "", "WORLD_SIZE is set but RANK is not"},
                      BadRow{"rank_outside_world", "RANK=2 WORLD_SIZE=2 MASTER_PORT=29999", "",
                             "RANK='2' must be an integer in [0, 1]"},
                      BadRow{"no_master_port", "RANK=0 WORLD_SIZE=2", "", "MASTER_PORT is not set"},
                      BadRow{"batch_smaller_than_ranks", "", " -p {plans1} --nproc_per_node 2",
                             "smaller than the 2 ranks"},
                      BadRow{"nproc_and_num_gpus_disagree", "", " --nproc_per_node 2 -num_gpus 3", "disagree"}),
    [](const auto& row_info) { return row_info.param.name; });

TEST(DataParallelBadInput, PortInUseAndRanksThatDisagree) {
  const std::string plans = dist_dataset().plans(4, false);
  test::TempDir d("ddpbad2");
  // A port someone else listens on: rank 0 cannot serve the rendezvous there.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  listen(fd, 1);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int busy = ntohs(a.sin_port);
  const std::string args = "953 3d_fullres 0 -p " + plans + " --epochs 1 --iters-per-epoch 1" + std::string(kFlags);
  auto r = test::run_cli(
      "medseg_train", args,
      dist_env(d / "res") + " RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(busy));
  close(fd);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cannot serve the rendezvous on 127.0.0.1:" + std::to_string(busy)), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(d / "res" + "/Dataset953_Tiny"));
  // Two ranks started with different trainer settings: both refuse before anything is written.
  const int port = free_port();
  const pid_t r0 = spawn_rank(0, port, d / "res2", args, d / "rank0.log");
  const pid_t r1 = spawn_rank(1, port, d / "res2", args + " --checkpoint-every 3", d / "rank1.log");
  EXPECT_NE(wait_for(r0, std::chrono::seconds(60)), 0);
  EXPECT_NE(wait_for(r1, std::chrono::seconds(60)), 0);
  EXPECT_NE(
      test::read_text(d / "rank0.log").find("rank 1 differs from rank 0 in its plans, dataset.json, trainer config"),
      std::string::npos)
      << test::read_text(d / "rank0.log") << "\n---\n"
      << test::read_text(d / "rank1.log");
  EXPECT_FALSE(
      fs::exists(d / "res2" + "/Dataset953_Tiny/nnUNetTrainer__" + plans + "__3d_fullres/fold_0/training_log.txt"));
}
