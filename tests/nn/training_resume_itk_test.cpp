// End-to-end training through the CLIs on a tiny synthetic dataset: an uninterrupted run and a run
// killed with SIGKILL mid-training then continued with --c must end with bit-identical weights
// (CPU, --deterministic). Ctrl-C (SIGINT) must save checkpoint_latest and exit cleanly.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <torch/cuda.h>

#include "checkpoint/checkpoint.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// Raw dataset -> fingerprint, plans, preprocessed 3d_fullres, shared by the tests of this file.
class TinyDataset : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("train");
    const std::string env = "MEDSEG_RAW=" + dir_->path() + "/raw MEDSEG_PREPROCESSED=" + dir_->path() + "/pre";
    fs::create_directories(dir_->path() + "/raw");
    auto r = test::run_cli("medseg_make_dataset", "-d 950 -n Tiny --cases 6 --min-shape 12 20 20 --max-shape 14 22 22 --seed 3", env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = test::run_cli("medseg_plan_and_preprocess", "-d 950 -c 3d_fullres --np 2 --no_pbar", env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string env(const std::string& results) {
    return "MEDSEG_RAW=" + dir_->path() + "/raw MEDSEG_PREPROCESSED=" + dir_->path() + "/pre MEDSEG_RESULTS=" + results;
  }
  static std::string train_args(int epochs = 3) {
    return "950 3d_fullres 0 --epochs " + std::to_string(epochs) + " --iters-per-epoch 4 --val-iters-per-epoch 1 --num-workers 2 --threads 1 "
           "--deterministic --checkpoint-every 1 --no_pbar";
  }
  static std::string fold_dir(const std::string& results) {
    return results + "/Dataset950_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres/fold_0";
  }
  // Starts medseg_train in the background; returns its pid.
  static pid_t spawn_train(const std::string& results, int epochs = 3) {
    const std::string cmd = "exec env " + env(results) + " " + std::string(std::getenv("MEDSEG_BIN_DIR")) +
                            "/medseg_train " + train_args(epochs) + " > " + results + ".log 2>&1";
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }
  static int wait_exit(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Waits until `file` has `lines` lines; false on timeout or when the process `pid` has exited.
  static bool wait_for_lines(const std::string& file, int lines, double seconds, pid_t pid) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (kill(pid, 0) != 0) return false;
      std::ifstream in(file);
      int n = 0;
      std::string l;
      while (std::getline(in, l)) ++n;
      if (n >= lines) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  static test::TempDir* dir_;
};
test::TempDir* TinyDataset::dir_ = nullptr;

}  // namespace

TEST_F(TinyDataset, KilledAndContinuedRunEqualsUninterruptedRun) {
  const std::string a = dir_->path() + "/results_a", b = dir_->path() + "/results_b";
  auto r = test::run_cli("medseg_train", train_args(), env(a));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(fold_dir(a) + "/checkpoint_final.ckpt"));
  EXPECT_TRUE(fs::exists(fold_dir(a) + "/progress.png"));
  EXPECT_TRUE(fs::exists(fold_dir(a) + "/validation/summary.json"));
  EXPECT_FALSE(fs::exists(fold_dir(a) + "/checkpoint_latest.ckpt"));  // removed at the end, as nnU-Net

  // Kill as soon as epoch 0 is logged: the process is somewhere in epoch 1 (or saving).
  const pid_t pid = spawn_train(b);
  ASSERT_TRUE(wait_for_lines(fold_dir(b) + "/metrics.jsonl", 1, 300, pid)) << test::read_text(b + ".log");
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
  ASSERT_FALSE(fs::exists(fold_dir(b) + "/checkpoint_final.ckpt"));
  r = test::run_cli("medseg_train", train_args() + " --c", env(b));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = test::run_cli("medseg_checkpoint", "diff " + fold_dir(a) + "/checkpoint_final.ckpt " + fold_dir(b) +
                                             "/checkpoint_final.ckpt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("max abs difference: 0\n"), std::string::npos) << r.output;
  const auto ca = checkpoint::load_checkpoint(fold_dir(a) + "/checkpoint_final.ckpt");
  const auto cb = checkpoint::load_checkpoint(fold_dir(b) + "/checkpoint_final.ckpt");
  EXPECT_EQ(ca.epoch, 3);
  EXPECT_EQ(cb.epoch, 3);
  ASSERT_EQ(ca.weights.size(), cb.weights.size());
  for (size_t i = 0; i < ca.weights.size(); ++i) {
    EXPECT_EQ(ca.weights[i].first, cb.weights[i].first);
    EXPECT_TRUE(ca.weights[i].second.equal(cb.weights[i].second)) << ca.weights[i].first;
  }
}

TEST_F(TinyDataset, CtrlCSavesLatestAndExitsCleanly) {
  const std::string c = dir_->path() + "/results_c";
  const pid_t pid = spawn_train(c, 50);
  ASSERT_TRUE(wait_for_lines(fold_dir(c) + "/metrics.jsonl", 1, 300, pid)) << test::read_text(c + ".log");
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  ASSERT_TRUE(fs::exists(fold_dir(c) + "/checkpoint_latest.ckpt"));
  const auto ck = checkpoint::load_checkpoint(fold_dir(c) + "/checkpoint_latest.ckpt");
  EXPECT_GE(ck.epoch, 1);
  EXPECT_LT(ck.epoch, 50);
}

TEST_F(TinyDataset, BadInputsGiveOneClearLine) {
  const std::string d = dir_->path() + "/results_d";
  auto r = test::run_cli("medseg_train", "950 3d_fullres 0 -p NoSuchPlans", env(d));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("NoSuchPlans.json"), std::string::npos) << r.output;
  r = test::run_cli("medseg_train", "950 4d_fullres 0", env(d));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("4d_fullres"), std::string::npos) << r.output;
  r = test::run_cli("medseg_train", "950 3d_fullres 7x", env(d));
  EXPECT_NE(r.exit_code, 0);
  r = test::run_cli("medseg_train", "950 3d_fullres 0 --tr /nonexistent/config.json", env(d));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("config"), std::string::npos) << r.output;
  // Precision and device refusals: one error line naming the flag, the last thing printed, before
  // any work (the version banner may come first).
  const auto one_line = [](const std::string& out) {
    const auto first = out.find("error:");
    return first != std::string::npos && out.find("error:", first + 1) == std::string::npos &&
           out.find('\n', first) == out.size() - 1;
  };
  r = test::run_cli("medseg_train", "950 3d_fullres 0 --amp fp16 --epochs 1", env(d));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--amp fp16 needs CUDA"), std::string::npos) << r.output;
  EXPECT_TRUE(one_line(r.output)) << r.output;
  if (!torch::cuda::is_available()) {
    r = test::run_cli("medseg_train", "950 3d_fullres 0 --device cuda --epochs 1", env(d));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("CUDA"), std::string::npos) << r.output;
    EXPECT_TRUE(one_line(r.output)) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(d + "/Dataset950_Tiny")) << "a refused run leaves no model folder";
}
