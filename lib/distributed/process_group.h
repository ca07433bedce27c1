#pragma once
// The ranks of a data-parallel run and the only place they talk: rendezvous on a c10d::TCPStore
// (rank 0 serves it on MASTER_ADDR:MASTER_PORT), collectives on c10d::ProcessGroupGloo (CPU) or
// ProcessGroupNCCL (CUDA builds). Every collective has the run's timeout; a rank that died or
// stopped answering becomes an Error naming this rank and the operation, never a hang.
#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "distributed/world.h"

namespace medseg::distributed {

// Another rank exited or stopped answering inside a collective or transfer: the run cannot go on.
// Loops that carry on after one item's failure (a case that cannot be read) let this one through,
// so that every rank stops within --dist-timeout of the fault instead of once per remaining item.
class PeerError : public Error {
 public:
  using Error::Error;
};

struct ProcessGroupOptions {
  std::chrono::seconds timeout{60};  // rendezvous and every collective
  bool cuda = false;                 // NCCL for tensors on the GPU (needs a CUDA build)
};

class ProcessGroup {
 public:
  // Joins the run `world` describes; returns when every rank has joined (or throws after timeout).
  static std::shared_ptr<ProcessGroup> connect(const World& world, const ProcessGroupOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  std::chrono::seconds timeout() const;

  // In place, every rank ends with the sum over ranks.
  void all_reduce_sum(at::Tensor& t);
  // Rank `root`'s tensors overwrite everyone's (same shapes on every rank).
  void broadcast(std::vector<at::Tensor>& tensors, int root = 0);
  // Point to point. Every send and receive in `transfers` is posted before any is waited for, so
  // neighbours that exchange in both directions at once cannot deadlock. A receive fills its tensor
  // in place (its shape and dtype must match the sender's). Ranks pair transfers by (peer, tag).
  struct Transfer {
    int peer = 0;
    bool send = true;
    at::Tensor tensor;
  };
  void exchange(std::vector<Transfer>& transfers, int tag = 0);
  void send(const at::Tensor& t, int dst, int tag = 0);
  void recv(at::Tensor& t, int src, int tag = 0);
  // Every rank's string, indexed by rank (through the store: any length, no tensors).
  std::vector<std::string> all_gather(const std::string& value);
  // `timeout` 0: the run's. Final validation waits longer: a dead rank still ends it at once (its
  // sockets close), only a slow case must not.
  void barrier(std::chrono::seconds timeout = std::chrono::seconds(0));

  // Wall time this rank spent inside all_reduce_sum and exchange (from posting to the last wait:
  // transfer and waiting for the peers), their calls and the bytes sent or reduced. For benchmarks
  // (the communication share of a step); one thread per rank, no locking.
  struct Traffic {
    double seconds = 0;
    int64_t calls = 0;
    int64_t bytes = 0;
  };
  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = {}; }

  struct Backend;  // c10d's objects; distributed/ only (gradient_sync.cpp)
  Backend& backend();

 private:
  explicit ProcessGroup(std::unique_ptr<Backend> b);
  std::unique_ptr<Backend> b_;
  Traffic traffic_;
};

// Sums `t` over the ranks inside autograd: forward all-reduces the value, backward all-reduces the
// gradient, so a loss built from globally summed statistics (batch Dice's tp/fp/fn) back-propagates
// into every rank's share exactly as on one process. `group` null: identity.
at::Tensor all_reduce_sum_with_grad(const at::Tensor& t, ProcessGroup* group);

// Runs `step` on every rank and agrees on the outcome: if any rank threw, every rank throws, the
// failing rank with its own message and the others with "rank R: <its message>". With `rank0_first`
// rank 0 runs alone first (it may create files the others then read).
void agree(ProcessGroup* group, const std::string& what, const std::function<void()>& step, bool rank0_first = false);

}  // namespace medseg::distributed
