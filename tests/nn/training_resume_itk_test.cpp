// End-to-end training through the CLIs on a tiny synthetic dataset (CPU, --deterministic): a run
// killed with SIGKILL mid-training, and a run stopped with Ctrl-C (SIGINT) in the middle of an epoch,
// each continued with --c, must end with weights bit-identical to an uninterrupted run's. Ctrl-C
// must save checkpoint_latest at the iteration it stopped and exit with 130.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <torch/cuda.h>

#include "checkpoint/checkpoint.h"
#include "core/json_io.h"
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
    auto r = test::run_cli("medseg_make_dataset",
                           "-d 950 -n Tiny --cases 6 --min-shape 12 20 20 --max-shape 14 22 22 --seed 3", env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = test::run_cli("medseg_plan_and_preprocess", "-d 950 -c 3d_fullres --np 2 --no_pbar", env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string env(const std::string& results) {
    return "MEDSEG_RAW=" + dir_->path() + "/raw MEDSEG_PREPROCESSED=" + dir_->path() + "/pre MEDSEG_RESULTS=" + results;
  }
  // Iterations per epoch: 4 are enough for a kill at an epoch's end; a Ctrl-C aims at the middle of
  // an epoch, which 8 make wide enough to hit.
  static constexpr int kEpochs = 3, kKillIters = 4, kCtrlCIters = 8;
  static std::string train_args(int iters) {
    return "950 3d_fullres 0 --epochs " + std::to_string(kEpochs) + " --iters-per-epoch " + std::to_string(iters) +
           " --val-iters-per-epoch 1 --num-workers 2 --threads 1 --deterministic --checkpoint-every 1 --no_pbar";
  }
  static std::string fold_dir(const std::string& results) {
    return results + "/Dataset950_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres/fold_0";
  }
  // The uninterrupted run with `iters` iterations per epoch.
  static std::string uninterrupted(int iters) {
    const std::string r = dir_->path() + "/results_reference_" + std::to_string(iters);
    const auto out = test::run_cli("medseg_train", train_args(iters), env(r));
    EXPECT_EQ(out.exit_code, 0) << out.output;
    return r;
  }
  // Starts medseg_train (with `extra` arguments) in the background, output to `log`; returns its pid.
  static pid_t spawn_train(const std::string& results, const std::string& log, int iters,
                           const std::string& extra = "") {
    const std::string cmd = "exec env " + env(results) + " " + std::string(std::getenv("MEDSEG_BIN_DIR")) +
                            "/medseg_train " + train_args(iters) + extra + " > " + log + " 2>&1";
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
  // Waits until `done()` holds; false on timeout or when the process `pid` has exited.
  template <class Done>
  static bool wait_until(Done done, double seconds, pid_t pid) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (kill(pid, 0) != 0) return false;
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  static int line_count(const std::string& file) {
    std::ifstream in(file);
    int n = 0;
    std::string l;
    while (std::getline(in, l)) ++n;
    return n;
  }
  // Both folds finished with bit-identical weights: medseg_checkpoint diff and tensor by tensor.
  static void expect_same_final_weights(const std::string& fold_a, const std::string& fold_b) {
    const std::string a = fold_a + "/checkpoint_final.ckpt", b = fold_b + "/checkpoint_final.ckpt";
    ASSERT_TRUE(fs::exists(a));
    ASSERT_TRUE(fs::exists(b));
    const auto r = test::run_cli("medseg_checkpoint", "diff " + a + " " + b);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("max abs difference: 0\n"), std::string::npos) << r.output;
    const auto ca = checkpoint::load_checkpoint(a), cb = checkpoint::load_checkpoint(b);
    EXPECT_EQ(ca.epoch, kEpochs);
    EXPECT_EQ(cb.epoch, kEpochs);
    ASSERT_EQ(ca.weights.size(), cb.weights.size());
    for (size_t i = 0; i < ca.weights.size(); ++i) {
      EXPECT_EQ(ca.weights[i].first, cb.weights[i].first);
      EXPECT_TRUE(ca.weights[i].second.equal(cb.weights[i].second)) << ca.weights[i].first;
    }
  }
  static test::TempDir* dir_;
};
test::TempDir* TinyDataset::dir_ = nullptr;

}  // namespace

TEST_F(TinyDataset, KilledAndContinuedRunEqualsUninterruptedRun) {
  const std::string a = uninterrupted(kKillIters), b = dir_->path() + "/results_b";
  ASSERT_TRUE(fs::exists(fold_dir(a) + "/checkpoint_final.ckpt"));
  EXPECT_TRUE(fs::exists(fold_dir(a) + "/progress.png"));
  EXPECT_TRUE(fs::exists(fold_dir(a) + "/validation/summary.json"));
  EXPECT_FALSE(fs::exists(fold_dir(a) + "/checkpoint_latest.ckpt"));  // removed at the end, as nnU-Net

  // Kill as soon as epoch 0 is logged: the process is somewhere in epoch 1 (or saving).
  const pid_t pid = spawn_train(b, b + ".log", kKillIters);
  ASSERT_TRUE(wait_until([&] { return line_count(fold_dir(b) + "/metrics.jsonl") >= 1; }, 300, pid))
      << test::read_text(b + ".log");
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
  ASSERT_FALSE(fs::exists(fold_dir(b) + "/checkpoint_final.ckpt"));
  const auto r = test::run_cli("medseg_train", train_args(kKillIters) + " --c", env(b));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_final_weights(fold_dir(a), fold_dir(b));
}

// SIGINT is polled between iterations, so the run stops inside the epoch and checkpoint_latest must
// hold that iteration (with the loader, RNG and optimizer state there); --c continues from it. The
// signal is sent half an epoch (timed on the uninterrupted run) after an epoch starts; when it misses
// the inside of an epoch, the run is continued and interrupted again (every stop keeps exactness),
// up to three times.
TEST_F(TinyDataset, CtrlCSavesLatestAndExitsCleanly) {
  const std::string ref = uninterrupted(kCtrlCIters), c = dir_->path() + "/results_c";
  const std::string latest = fold_dir(c) + "/checkpoint_latest.ckpt";
  const std::string metrics = test::read_text(fold_dir(ref) + "/metrics.jsonl");
  const double half_epoch = json::parse(metrics.substr(0, metrics.find('\n'))).at("epoch_time").get<double>() / 2;
  bool mid_epoch = false;
  for (int attempt = 0; attempt < 3 && !mid_epoch; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    const std::string log = c + "." + std::to_string(attempt) + ".log";
    const pid_t pid = spawn_train(c, log, kCtrlCIters, attempt == 0 ? "" : " --c");
    // A new run writes checkpoint_latest after epoch 0 (--checkpoint-every 1), then starts epoch 1;
    // a continued one logs "resumed from" just before it starts iterating.
    const auto epoch_started = [&] {
      return attempt == 0 ? fs::exists(latest) : test::read_text(log).find("resumed from") != std::string::npos;
    };
    ASSERT_TRUE(wait_until(epoch_started, 300, pid)) << test::read_text(log);
    std::this_thread::sleep_for(std::chrono::duration<double>(half_epoch));
    kill(pid, SIGINT);
    ASSERT_EQ(wait_exit(pid), 130) << test::read_text(log);
    EXPECT_NE(test::read_text(log).find("interrupted; resume with --c"), std::string::npos) << test::read_text(log);
    ASSERT_FALSE(fs::exists(fold_dir(c) + "/checkpoint_final.ckpt"));
    ASSERT_TRUE(fs::exists(latest));
    const auto ck = checkpoint::load_checkpoint(latest);
    const int64_t iteration = ck.sampler.value("next_iteration", int64_t{-1});
    EXPECT_LT(ck.epoch, kEpochs);
    mid_epoch = iteration > 0 && iteration < kCtrlCIters;
    std::printf("Ctrl-C %d stopped at epoch %lld, iteration %lld\n", attempt, static_cast<long long>(ck.epoch),
                static_cast<long long>(iteration));
  }
  ASSERT_TRUE(mid_epoch) << "no Ctrl-C landed inside an epoch";
  const auto r = test::run_cli("medseg_train", train_args(kCtrlCIters) + " --c", env(c));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_final_weights(fold_dir(ref), fold_dir(c));
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
