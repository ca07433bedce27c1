#pragma once
// Optimizer state keyed by parameter NAME (not pointer or index), so it can be restored into an
// optimizer built over a freshly constructed model. Supports SGD, Adam and AdamW.
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <map>
#include <string>
#include <unordered_map>

namespace medseg::checkpoint {

struct OptimizerState {
  std::string type;                                                  // "SGD", "Adam", "AdamW"; empty = none saved
  nlohmann::json groups = nlohmann::json::array();                   // [{"options":{...}, "params":[names]}]
  std::map<std::string, nlohmann::json> scalars;                     // param name -> {"step": n}
  std::map<std::string, std::map<std::string, at::Tensor>> buffers;  // param -> slot -> tensor
};

// The name of each distinct parameter (its first name in named_parameters() order), by TensorImpl.
std::unordered_map<const c10::TensorImpl*, std::string> parameter_names(const torch::nn::Module& model);

// "SGD", "Adam" or "AdamW"; throws Error for other optimizers.
std::string optimizer_type(const torch::optim::Optimizer& opt);

// Reads the optimizer's per-parameter state; every optimized parameter must belong to `model`.
OptimizerState capture_optimizer_state(torch::optim::Optimizer& opt, const torch::nn::Module& model);

// Replaces the optimizer's state and group options with `state`, matching parameters by name.
// Throws Error for a different optimizer type or group layout.
void restore_optimizer_state(torch::optim::Optimizer& opt, const torch::nn::Module& model, const OptimizerState& state);

}  // namespace medseg::checkpoint
