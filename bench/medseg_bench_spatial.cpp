// medseg_bench_spatial: what spatial parallelism (docs/spatial_parallel.md) buys and costs on this
// machine, for a ResidualEncoderUNet 3D on one cubic patch at batch 1:
//   memory: the peak CPU bytes above the start of one forward + backward, per rank, with the patch
//           split over R ranks against one process holding it whole; prints the ratio R / 1.
//   communication share: for one ResEnc stage (full resolution) forward + backward on R ranks, the
//           time spent in halo exchanges and all-reduces (ProcessGroup::traffic) over the total.
// Every rank is its own forked process: the counting allocator (core_torch/torch_memory.h) is process-wide,
// so ranks as threads would count each other's tensors. Children are forked before the parent
// touches torch (no thread pool to inherit). scripts/bench/bench_spatial.sh runs it.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_common.h"
#include "core/error.h"
#include "core_torch/torch_memory.h"
#include "distributed/halo.h"
#include "distributed/launch.h"
#include "distributed/process_group.h"
#include "models/network.h"
#include "models/unet.h"
#include "models/unet_blocks.h"

using namespace medseg;

namespace {

struct Settings {
  int patch = 64, ranks = 2, axis = 0, threads = 1, stage_iters = 5;
  std::vector<int64_t> features{4, 8, 16, 16};
};

// One rank's figures, sent to the parent through a pipe.
struct RankResult {
  double peak_bytes = 0, stage_seconds = 0, stage_comm_seconds = 0, net_seconds = 0, net_comm_seconds = 0;
};

models::UNetOptions resenc_options(const Settings& s) {
  const auto n = static_cast<int64_t>(s.features.size());
  std::vector<models::Shape> strides{{1}};
  for (int64_t i = 1; i < n; ++i) strides.push_back({2});
  return models::UNetOptions(1, 3, s.features)
      .kernel_sizes(std::vector<models::Shape>(n, models::Shape{3}))
      .strides(strides)
      .n_blocks_per_stage(std::vector<int64_t>(n, 2))
      .n_conv_per_stage_decoder(std::vector<int64_t>(n - 1, 1));
}

std::shared_ptr<distributed::ProcessGroup> join(int rank, int ranks, int port) {
  if (ranks == 1) return nullptr;
  distributed::World w;
  w.rank = rank;
  w.world_size = ranks;
  w.master_port = port;
  return distributed::ProcessGroup::connect(w, {});
}

// Forward + backward with a loss of globally summed terms; returns the seconds it took.
double step(const std::function<std::vector<at::Tensor>()>& forward, distributed::ProcessGroup* g) {
  const auto t0 = std::chrono::steady_clock::now();
  at::Tensor loss = at::zeros({});
  for (const auto& y : forward()) loss = loss + distributed::all_reduce_sum_with_grad(y.mean(), g);
  loss.backward();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void measure_network(const Settings& s, int rank, int ranks, distributed::ProcessGroup* g, RankResult& r) {
  at::manual_seed(1);
  auto net = std::make_shared<models::ResidualEncoderUNetImpl>(resenc_options(s));
  if (g) net->set_spatial_shard(distributed::shard_over_group(*g, s.axis));
  const at::Tensor slab = distributed::spatial_slab(at::randn({1, 1, s.patch, s.patch, s.patch}), s.axis, rank, ranks);
  if (g) g->reset_traffic();
  const CpuPeakScope scope;
  r.net_seconds = step([&] { return net->forward(slab); }, g);
  r.peak_bytes = static_cast<double>(scope.peak_above_start());
  r.net_comm_seconds = g ? g->traffic().seconds : 0.0;
}

void measure_stage(const Settings& s, int rank, int ranks, distributed::ProcessGroup* g, RankResult& r) {
  const int64_t c = s.features[0];
  auto stage = models::StackedResidualBlocks(
      models::StackedResidualBlocksOptions(c, c, {3}, resenc_options(s).layer_options()).n_blocks(2));
  if (g) models::shard_conv_blocks(*stage, distributed::shard_over_group(*g, s.axis));
  const at::Tensor slab =
      distributed::spatial_slab(at::randn({1, c, s.patch, s.patch, s.patch}), s.axis, rank, ranks).requires_grad_(true);
  const auto fwd = [&] { return std::vector<at::Tensor>{stage->forward(slab)}; };
  step(fwd, g);  // warm-up
  if (g) g->reset_traffic();
  for (int i = 0; i < s.stage_iters; ++i) r.stage_seconds += step(fwd, g);
  r.stage_comm_seconds = g ? g->traffic().seconds : 0.0;
}

// The child's whole life: it never returns into the parent's code (see run_ranks).
[[noreturn]] void rank_process(const Settings& s, int rank, int ranks, int port, int fd) {
  int code = 0;
  try {
    at::set_num_threads(s.threads);
    install_counting_cpu_allocator();
    auto g = join(rank, ranks, port);
    RankResult r;
    measure_network(s, rank, ranks, g.get(), r);
    measure_stage(s, rank, ranks, g.get(), r);
    if (g) g->barrier();
    if (write(fd, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) code = 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d of %d: %s\n", rank, ranks, e.what());
    code = 2;
  }
  // _exit, not return or exit(): a forked child must not run the parent's atexit handlers or
  // unwind into its CLI code.
  _exit(code);
}

// Forks `ranks` processes and collects one RankResult from each.
std::vector<RankResult> run_ranks(const Settings& s, int ranks) {
  const int port = ranks > 1 ? distributed::free_loopback_port() : 0;
  std::vector<pid_t> pids;
  std::vector<int> fds;
  for (int r = 0; r < ranks; ++r) {
    int p[2];
    if (pipe(p) != 0) throw Error("medseg_bench_spatial: pipe failed");
    const pid_t pid = fork();
    if (pid < 0) throw Error("medseg_bench_spatial: fork failed");
    if (pid == 0) {
      close(p[0]);
      rank_process(s, r, ranks, port, p[1]);
    }
    close(p[1]);
    pids.push_back(pid);
    fds.push_back(p[0]);
  }
  std::vector<RankResult> out(ranks);
  bool ok = true;
  for (int r = 0; r < ranks; ++r) {
    ok = read(fds[r], &out[r], sizeof out[r]) == static_cast<ssize_t>(sizeof out[r]) && ok;
    close(fds[r]);
    int status = 0;
    waitpid(pids[r], &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  MEDSEG_CHECK(ok, "medseg_bench_spatial: a rank of the ", ranks, "-rank run failed");
  return out;
}

double mib(double b) { return b / (1 << 20); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Spatially sharded ResidualEncoderUNet: memory per rank and communication share",
               "medseg_bench_spatial"};
  Settings s;
  double max_ratio = 0;
  app.add_option("--patch", s.patch, "cubic patch extent (divisible by ranks x 2^(stages-1))");
  app.add_option("--ranks", s.ranks, "ranks of the sharded run (each a process)");
  app.add_option("--axis", s.axis, "spatial axis the patch is split along (0 = z)");
  app.add_option("--features", s.features, "features per stage");
  app.add_option("--threads", s.threads, "torch intra-op threads per rank");
  app.add_option("--stage-iters", s.stage_iters, "timed forward+backward iterations of the stage");
  app.add_option("--max-ratio", max_ratio, "fail when the memory ratio is above this (0: report only)");
  return cli::run(argc, argv, app, [&] {
    const auto one = run_ranks(s, 1);
    const auto many = run_ranks(s, s.ranks);
    double peak = 0, stage = 0, stage_comm = 0, net = 0, net_comm = 0;
    for (const auto& r : many) {
      peak = std::max(peak, r.peak_bytes);
      stage += r.stage_seconds / s.ranks;
      stage_comm += r.stage_comm_seconds / s.ranks;
      net += r.net_seconds / s.ranks;
      net_comm += r.net_comm_seconds / s.ranks;
    }
    const double ratio = peak / one[0].peak_bytes;
    std::printf("ResidualEncoderUNet 3d, patch %d^3, features", s.patch);
    for (auto f : s.features) std::printf(" %lld", static_cast<long long>(f));
    std::printf(", split along axis %d, %d thread(s) per rank\n", s.axis, s.threads);
    std::printf("peak bytes forward+backward: 1 rank %.1f MiB, %d ranks %.1f MiB per rank (max), ratio %.3f\n",
                mib(one[0].peak_bytes), s.ranks, mib(peak), ratio);
    std::printf(
        "stage 0 forward+backward (%d iters): %.3f s per rank (1 rank: %.3f s), communication %.3f s = %.1f %%\n",
        s.stage_iters, stage, one[0].stage_seconds, stage_comm, 100.0 * stage_comm / stage);
    std::printf(
        "whole network, one step (first, not warmed up): %.3f s per rank (1 rank: %.3f s), communication %.1f %%\n",
        net, one[0].net_seconds, 100.0 * net_comm / net);
    if (max_ratio > 0 && ratio > max_ratio) {
      std::printf("FAIL: memory ratio %.3f > %.3f\n", ratio, max_ratio);
      return 1;
    }
    return 0;
  });
}
