#pragma once
// The trainer's process-group part: what changes when a run spans several ranks, in one place, so
// the loop reads the same with one process or many. With no group every call is the identity and
// this process is the writer.
//
// Why the result equals one process on the global batch (docs/distributed.md):
//  - rank r builds samples [b_r, e_r) of the global batch (data::batch_share), drawn exactly as the
//    single process draws them;
//  - its loss is scaled by n_r * R / B before backward, and the gradient engine averages over the R
//    ranks, so the update is sum_r (n_r / B) * grad_r: the gradient of the batch mean, also when B is
//    not a multiple of R;
//  - batch Dice's tp/fp/fn are summed over ranks inside autograd (distributed::all_reduce_sum_with_grad);
//  - weights and buffers start from rank 0's, and every rank checks it holds the same plans, config,
//    dataset and weights.
//
// Spatial parallelism (`spatial_axis` >= 0, docs/spatial_parallel.md): every rank draws the whole
// batch and keeps its slab of every patch along the axis (the network exchanges halos and reduces
// instance-norm statistics over the slabs); the loss pools its sums over the slabs (spatial_sum),
// so it is the whole batch's on every rank, and averaging the gradients over the ranks is exact.
#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/batch.h"
#include "training/loss.h"

namespace torch::nn {
class Module;
}
namespace medseg::distributed {
class ProcessGroup;
class GradientSync;
}  // namespace medseg::distributed

namespace medseg::training {

class DataParallel {
 public:
  // `group` null or of size 1: one process. Throws when the batch has fewer samples than ranks
  // (data parallelism). `spatial_axis` >= 0: the ranks share every patch instead, in slabs.
  DataParallel(std::shared_ptr<distributed::ProcessGroup> group, int64_t global_batch, int spatial_axis = -1);
  ~DataParallel();
  DataParallel(DataParallel&&) noexcept;
  DataParallel& operator=(DataParallel&&) noexcept;

  bool active() const { return group_ != nullptr; }
  bool writer() const;  // rank 0, or the single process: checkpoints, logs, progress.png
  int rank() const;
  int size() const;
  distributed::ProcessGroup* group() const { return group_.get(); }
  data::BatchShare share() const { return share_; }
  int64_t largest_share() const;
  // The factor of this rank's loss before backward: n_r * R / B (1 for one process).
  double loss_weight() const;
  // Sums over ranks inside autograd: DiceCeOptions::batch_sum under batch Dice.
  BatchSumFn batch_sum() const;
  // Spatial parallelism: the slab axis (-1: none), DiceCeOptions::spatial_sum, and this rank's slab
  // of a (B, C, *spatial) batch tensor (the tensor itself without spatial parallelism).
  int spatial_axis() const { return spatial_axis_; }
  BatchSumFn spatial_sum() const;
  at::Tensor slab(const at::Tensor& t) const;

  // Copies rank 0's parameters and buffers to every rank, then starts the gradient engine on the
  // module's parameters (once).
  void synchronise(torch::nn::Module& model, const std::vector<at::Tensor>& params);
  void before_forward();
  void backward(const at::Tensor& scaled_loss);
  // sum_r (n_r / B) * value_r: this rank's share of a batch-mean quantity, made global.
  double batch_mean(double value) const;
  DiceCounts sum(const DiceCounts& counts) const;
  // True on every rank when any rank asked to stop (Ctrl-C reaches ranks at different moments).
  bool agree_to_stop(bool local) const;
  // Every rank's `value` must equal rank 0's; Error naming `what` and the first rank that differs.
  void check_same(const std::string& what, const std::string& value) const;
  // Every rank's `cases` (one line per case, data/case_digest.h) must equal rank 0's: Error naming
  // the first rank that differs and its first differing case. One small all-gather when they agree.
  void check_same_cases(const std::vector<std::string>& cases) const;
  // The cases rank r handles out of `ids` (every R-th, from r), and a barrier after them.
  std::vector<std::string> my_cases(const std::vector<std::string>& ids) const;
  void barrier(std::chrono::seconds timeout = std::chrono::seconds(0)) const;

 private:
  std::shared_ptr<distributed::ProcessGroup> group_;
  std::unique_ptr<distributed::GradientSync> sync_;
  int64_t batch_ = 1;
  int spatial_axis_ = -1;
  data::BatchShare share_;
};

// A digest (core/digest.h) of the bytes of every parameter and buffer (what check_same compares after a resume).
std::string weights_digest(const torch::nn::Module& model);

}  // namespace medseg::training
