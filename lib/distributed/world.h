#pragma once
// Where this process stands in a run: rank, world size and the rendezvous address, read from the
// environment torchrun, SLURM wrappers and medseg's own launcher set (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT). No torch: the CLI reads it before anything heavy starts.
#include <string>

namespace medseg::distributed {

struct World {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;

  bool distributed() const { return world_size > 1; }
  // "rank 1 of 2" for messages; "" for a single process.
  std::string label() const;
};

// None of the variables set: one process. WORLD_SIZE without RANK (or the reverse), a rank outside
// [0, WORLD_SIZE), a missing MASTER_PORT or a value that is not a number: Error naming the variable.
World world_from_environment();

}  // namespace medseg::distributed
