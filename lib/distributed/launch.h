#pragma once
// `--nproc_per_node N`: the program re-executes itself as N local ranks, torchrun style. The
// launcher picks a free loopback port for rank 0's rendezvous, starts every rank with RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT in its environment, and watches them:
//  - a rank that exits non-zero or is killed (SIGKILL, OOM) is named in one line (its own error line
//    when it wrote one, kRankErrorFileVariable) and the others are stopped (SIGTERM, then SIGKILL
//    after `grace`), so nothing is left running;
//  - Ctrl-C (SIGINT/SIGTERM) on the launcher is passed to every rank once; they agree on the
//    iteration to stop at, rank 0 saves checkpoint_latest, and the launcher returns their status.
// Ranks run in their own process group and die with the launcher (PR_SET_PDEATHSIG).
#include <chrono>
#include <string>
#include <vector>

#include "core/rank_error_file.h"  // kRankErrorFileVariable

namespace medseg::distributed {

struct LaunchOptions {
  int nproc = 2;
  std::chrono::seconds grace{60};       // how long stopped ranks get before SIGKILL
  std::string program_name = "medseg";  // for messages
};

// `args`: the rank's argv (argv[0] first); re-executes /proc/self/exe. Returns the exit status the
// launcher should exit with: 0 when every rank succeeded, else the first failing rank's status
// (128 + signal for a killed rank).
int launch_local_ranks(const std::vector<std::string>& args, const LaunchOptions& options);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_loopback_port();

}  // namespace medseg::distributed
