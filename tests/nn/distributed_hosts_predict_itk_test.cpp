// Sharded prediction across hosts (docs/distributed.md): medseg_predict ranks started torchrun style
// (the five variables only) on two network namespaces joined by a veth pair, against the loopback
// run of the same two ranks (medseg_predict --nproc_per_node 2), the clock and the files written.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "distributed/launch.h"
#include "distributed_hosts_support.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
using test::TwoHosts;
using test::wavy_image;
namespace fs = std::filesystem;

namespace {

constexpr int kPredictTimeout = 5;   // --dist-timeout
constexpr double kPredictSlack = 4;  // a rank's start and exit on a loaded 2-core machine

// A one-fold tiny model and `cases` input images under `dir`.
struct Inputs {
  std::string model, in;
};
Inputs make_inputs(const std::string& dir, int cases) {
  test::TinyModelSpec s;
  s.labels = {"background", "a", "b"};
  auto net = test::tiny_network(s, 11);
  test::write_model_folder(dir + "/model", s, net, {"0"});
  fs::create_directories(dir + "/in");
  for (int i = 0; i < cases; ++i)
    io::write_image(dir + "/in/c" + std::to_string(i) + "_0000.nii.gz", wavy_image({40, 22, 19}, i));
  return {dir + "/model", dir + "/in"};
}

std::string hosts_predict_args(const Inputs& in, const std::string& out) {
  return "-i " + in.in + " -o " + out + " -m " + in.model +
         " -f 0 --save_probabilities --threads 1 -npp 0 -nps 0 "
         "--disable_progress_bar --dist-timeout " +
         std::to_string(kPredictTimeout);
}

// The predictions of `a` and `b`: the same files with the same bytes (probabilities) and voxels.
void expect_same_outputs(const std::string& a, const std::string& b, int cases) {
  for (int i = 0; i < cases; ++i) {
    const std::string id = "c" + std::to_string(i);
    ASSERT_TRUE(fs::exists(b + "/" + id + ".nii.gz")) << id;
    EXPECT_EQ(io::read_image(a + "/" + id + ".nii.gz").to_float(), io::read_image(b + "/" + id + ".nii.gz").to_float())
        << id;
    EXPECT_EQ(test::read_text(a + "/" + id + "_probabilities.npy"),
              test::read_text(b + "/" + id + "_probabilities.npy"))
        << id;
  }
}

struct PredictHostRun {
  pid_t rank[2] = {-1, -1};
};
// `args1`: host 1's arguments when they differ (its own copy of the inputs).
PredictHostRun predict_on_hosts(const TwoHosts& hosts, test::Processes& procs, const std::string& dir,
                                const std::string& args, int port, const std::string& tag = "",
                                const std::string& args1 = "") {
  PredictHostRun run;
  for (int h = 0; h < 2; ++h)
    run.rank[h] = procs.start(hosts.on(h, test::torchrun_env(h, 2, TwoHosts::address(0), port) + " " + test::bin_dir() +
                                              "/medseg_predict " + (h == 1 && !args1.empty() ? args1 : args)),
                              dir + "/rank" + std::to_string(h) + tag + ".log");
  return run;
}

}  // namespace

// Host 1 reads its own copy of the input images (the digest check passes: same bytes).
TEST(DistributedHostsPredict, TwoHostsEachReadingItsOwnCopyPredictLikeLoopback) {
  if (!test::can_make_namespaces()) GTEST_SKIP() << "needs root and `ip netns`";
  TwoHosts hosts;
  ASSERT_TRUE(hosts.ok()) << "could not make the two namespaces";
  test::Processes procs;
  test::TempDir d("hosts_pred");
  const Inputs in = make_inputs(d.path(), 2);
  const auto loop = test::run_cli("medseg_predict", hosts_predict_args(in, d / "loop") + " --nproc_per_node 2");
  ASSERT_EQ(loop.exit_code, 0) << loop.output;
  fs::copy(in.in, d / "in1", fs::copy_options::recursive);
  Inputs copy = in;
  copy.in = d / "in1";
  const PredictHostRun run = predict_on_hosts(hosts, procs, d.path(), hosts_predict_args(in, d / "hosts"), 29500, "",
                                              hosts_predict_args(copy, d / "hosts"));
  for (int h = 0; h < 2; ++h)
    EXPECT_EQ(test::wait_exit(run.rank[h], std::chrono::seconds(h == 0 ? 120 : 30)), 0)
        << test::read_text(d / ("rank" + std::to_string(h) + ".log"));
  EXPECT_NE(test::read_text(d / "rank0.log").find("Gloo on 10.78.0.1"), std::string::npos)
      << test::read_text(d / "rank0.log");
  expect_same_outputs(d / "loop", d / "hosts", 2);
}

TEST(DistributedHostsPredict, LinkCutStopsBothRanksWithinTheTimeoutAndTheRunContinues) {
  if (!test::can_make_namespaces()) GTEST_SKIP() << "needs root and `ip netns`";
  TwoHosts hosts;
  ASSERT_TRUE(hosts.ok()) << "could not make the two namespaces";
  test::Processes procs;
  test::TempDir d("hosts_pred_cut");
  const int cases = 6;
  const Inputs in = make_inputs(d.path(), cases);
  const std::string args = hosts_predict_args(in, d / "hosts");
  const PredictHostRun run = predict_on_hosts(hosts, procs, d.path(), args, 29500);
  // Cut once the first case is written: the next ones need the link (every case's tiles are shared).
  ASSERT_TRUE(test::wait_for_file(d / "hosts/c0_probabilities.npy", "", std::chrono::seconds(120)))
      << test::read_text(d / "rank0.log");
  ASSERT_TRUE(hosts.cut());
  double took[2] = {0, 0};
  int status[2];
  for (int h = 0; h < 2; ++h) status[h] = test::wait_exit(run.rank[h], std::chrono::seconds(60), &took[h]);
  took[1] += took[0];
  for (int h = 0; h < 2; ++h) {
    const std::string log = test::read_text(d / ("rank" + std::to_string(h) + ".log"));
    EXPECT_NE(status[h], 0) << log;
    EXPECT_NE(status[h], -1) << log;
    EXPECT_LT(took[h], kPredictTimeout + kPredictSlack) << log;
    EXPECT_NE(log.find("rank " + std::to_string(h) + " of 2: "), std::string::npos) << log;
    EXPECT_NE(log.find("rank " + std::to_string(1 - h) + " exited or did not answer within 5 s"), std::string::npos)
        << log;
  }
  std::printf("predict link cut: rank 0 exited %d after %.2f s, rank 1 %d after %.2f s\n", status[0], took[0],
              status[1], took[1]);
  ASSERT_FALSE(fs::exists(d / ("hosts/c" + std::to_string(cases - 1) + ".nii.gz"))) << "the cut came too late";
  // Link back: --continue_prediction predicts the rest; everything equals the loopback run.
  ASSERT_TRUE(hosts.restore());
  const PredictHostRun again = predict_on_hosts(hosts, procs, d.path(), args + " --continue_prediction", 29501, "_c");
  for (int h = 0; h < 2; ++h)
    EXPECT_EQ(test::wait_exit(again.rank[h], std::chrono::seconds(h == 0 ? 120 : 30)), 0)
        << test::read_text(d / ("rank" + std::to_string(h) + "_c.log"));
  const auto loop = test::run_cli("medseg_predict", hosts_predict_args(in, d / "loop") + " --nproc_per_node 2");
  ASSERT_EQ(loop.exit_code, 0) << loop.output;
  expect_same_outputs(d / "loop", d / "hosts", cases);
}

TEST(DistributedHostsPredict, RankReadingOtherImagesIsRefusedNamingTheCase) {
  test::TempDir d("pred_digest");
  const Inputs in = make_inputs(d.path(), 2);
  // Rank 1's copy of the inputs: case c1 replaced by zeros of the same shape.
  fs::copy(in.in, d / "in1", fs::copy_options::recursive);
  Volume zero = wavy_image({40, 22, 19}, 1);
  std::fill(zero.data<float>(), zero.data<float>() + 40 * 22 * 19, 0.0f);
  io::write_image(d / "in1/c1_0000.nii.gz", zero);
  test::Processes procs;
  const int port = distributed::free_loopback_port();
  pid_t rank[2];
  for (int r = 0; r < 2; ++r) {
    Inputs mine = in;
    if (r == 1) mine.in = d / "in1";
    rank[r] = procs.start("env " + test::torchrun_env(r, 2, "127.0.0.1", port) + " " + test::bin_dir() +
                              "/medseg_predict " + hosts_predict_args(mine, d / "out"),
                          d / ("rank" + std::to_string(r) + ".log"));
  }
  for (int r = 0; r < 2; ++r) {
    const std::string log = test::read_text(d / ("rank" + std::to_string(r) + ".log"));
    EXPECT_EQ(test::wait_exit(rank[r], std::chrono::seconds(60)), 1) << log;
  }
  const std::string log0 = test::read_text(d / "rank0.log");
  EXPECT_NE(log0.find("rank 1 reads other input images than rank 0: case 'c1' differs"), std::string::npos) << log0;
  EXPECT_FALSE(fs::exists(d / "out/c0.nii.gz"));
}
