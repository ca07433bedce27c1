#pragma once
// Activation (gradient) checkpointing for LibTorch, which has no torch.utils.checkpoint.
// The wrapped function runs without recording a graph; backward re-runs it with grad enabled and
// back-propagates through the recomputed graph. CPU/CUDA RNG states and the autocast state of the
// forward call are restored for the recomputation, so dropout / drop-path masks replay exactly.
#include <torch/nn/module.h>
#include <torch/types.h>

#include <functional>
#include <vector>

namespace medseg::models {

using TensorFn = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;

// Runs fn(inputs) checkpointed. `params` are the trainable tensors fn uses (they become inputs of the
// autograd node, so their gradients flow even when no input requires grad). Without grad mode, or if
// nothing requires grad, this is a plain call. fn must not modify its inputs in place.
std::vector<torch::Tensor> activation_checkpoint(const TensorFn& fn, const std::vector<torch::Tensor>& inputs,
                                                 const std::vector<torch::Tensor>& params);

// Single-tensor convenience: y = fn(x) with the trainable parameters of `module`.
torch::Tensor activation_checkpoint(const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                                    const torch::Tensor& x, const torch::nn::Module& module);

}  // namespace medseg::models
