#pragma once
// How a command runs as several local ranks (docs/distributed.md), shared by medseg_train and medseg_predict:
// the launcher part (--nproc_per_node N re-executes the program as N ranks and watches them) and the rank
// part (this process joins the others, with its GPU, its share of the host's cores and its log).
#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "distributed/world.h"

namespace medseg::distributed {

// Whether this process is the launcher of a run of `ranks` local ranks: more than one, and no RANK in the
// environment (a started rank has one). Otherwise it goes on, as a rank or alone.
bool is_launcher(int ranks);

// The launcher's work: starts the ranks (re-executing `args`, argv[0] first) and returns the exit status of the
// run (launch.h).
int launch_ranks(int ranks, const std::vector<std::string>& args, const std::string& program, int timeout_s);

struct RankSettings {
  std::string device;  // "cuda" becomes "cuda:<LOCAL_RANK>": one GPU per local rank
  int threads = 0;     // 0: the host's `host_threads` shared between the local ranks (LOCAL_WORLD_SIZE)
  int host_threads = 1;
  int timeout_s = 1800;  // rendezvous and every collective
  bool nccl = false;     // collectives on GPU tensors (training's gradients); prediction sends host tensors
  std::string program;   // for the log line
};

struct JoinedRank {
  std::shared_ptr<ProcessGroup> group;
  std::string device;
  int threads = 1;
  bool quiet = false;  // not rank 0: no progress bar (rank 0 speaks for the run)
};

// This rank of a multi-rank run (world.distributed()): its device and threads, and its process group. A rank other than
// 0 logs warnings and errors only, each line prefixed with its rank (spdlog's default logger: the caller's process is
// this rank).
JoinedRank join_ranks(const World& world, const RankSettings& settings);

}  // namespace medseg::distributed
