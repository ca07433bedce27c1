#pragma once
// c10d's objects behind distributed::ProcessGroup; included by distributed/*.cpp only.
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/process_group.h"

namespace medseg::distributed {

struct ProcessGroup::Backend {
  World world;
  std::chrono::seconds timeout{60};
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> cpu;   // Gloo: always (small tensors, CPU ranks)
  c10::intrusive_ptr<c10d::ProcessGroup> cuda;  // NCCL when the run is on CUDA, else null
  std::vector<std::string> addresses;           // every rank's advertised address (rendezvous.h)

  const c10::intrusive_ptr<c10d::ProcessGroup>& group_ptr_for(const at::Tensor& t) const {
    return (t.defined() && t.is_cuda() && cuda) ? cuda : cpu;
  }
  c10d::ProcessGroup& group_for(const at::Tensor& t) const { return *group_ptr_for(t); }
  // Error "rank R of N: <op> failed: rank P exited or did not answer within T s (...)" from a c10d
  // exception, naming the peer when it is known (rendezvous.h: blamed_ranks).
  [[noreturn]] void fail(const std::string& op, const std::exception& e) const;
};

}  // namespace medseg::distributed
