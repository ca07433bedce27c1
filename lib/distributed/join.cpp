#include "distributed/join.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "distributed/launch.h"

namespace medseg::distributed {

bool is_launcher(int ranks) { return ranks > 1 && std::getenv("RANK") == nullptr; }

int launch_ranks(int ranks, const std::vector<std::string>& args, const std::string& program, int timeout_s) {
  LaunchOptions lo;
  lo.nproc = ranks;
  lo.grace = std::chrono::seconds(timeout_s);
  lo.program_name = program;
  return launch_local_ranks(args, lo);
}

JoinedRank join_ranks(const World& world, const RankSettings& settings) {
  JoinedRank r;
  r.device = settings.device == "cuda" ? "cuda:" + std::to_string(world.local_rank) : settings.device;
  r.threads = settings.threads;
  if (r.threads <= 0) {
    const char* lws = std::getenv("LOCAL_WORLD_SIZE");
    r.threads = std::max(1, settings.host_threads / (lws ? std::max(1, std::atoi(lws)) : 1));
  }
  if (world.rank != 0) {
    spdlog::set_level(spdlog::level::warn);
    spdlog::set_pattern("[rank " + std::to_string(world.rank) + "] %l: %v");
    r.quiet = true;
  }
  ProcessGroupOptions po;
  po.timeout = std::chrono::seconds(settings.timeout_s);
  po.cuda = settings.nccl;
  r.group = ProcessGroup::connect(world, po);
  spdlog::info("{}: {} ranks joined on {}:{}", settings.program, world.world_size, world.master_addr,
               world.master_port);
  return r;
}

}  // namespace medseg::distributed
