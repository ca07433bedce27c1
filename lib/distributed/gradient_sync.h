#pragma once
// Data-parallel gradient averaging with DDP's own engine, c10d::Reducer: parameters are grouped
// into buckets (25 MB, the first 1 MB as in PyTorch's DDP), and a bucket's all-reduce starts from an
// autograd hook as soon as its last gradient is ready, while backward is still running on the
// rest. When backward returns, every rank holds the mean of the ranks' gradients.
//
// Unused parameters (deep supervision's lowest output has weight 0) are found by walking the graph
// from the loss (find_unused_parameters); a parameter no rank used keeps an undefined gradient, as
// on one process, so the optimizer skips it there too.
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace medseg::distributed {

class ProcessGroup;

class GradientSync {
 public:
  // `params` in the order every rank registers them (the model's parameter order); names for
  // messages. The group must outlive this object.
  GradientSync(const std::vector<at::Tensor>& params, const std::vector<std::string>& names, ProcessGroup& group);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Before the forward pass of every step.
  void before_forward();
  // loss.backward() with the all-reduce of every bucket; a rank that died during it is an Error
  // naming this rank, not a hang.
  void backward(const at::Tensor& loss);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medseg::distributed
