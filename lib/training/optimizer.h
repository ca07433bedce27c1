#pragma once
// Optimizer factory with nnU-Net's defaults (SGD, Nesterov momentum 0.99, weight decay 3e-5,
// lr 1e-2) and AdamW (SwinUNETR), plus gradient-norm clipping and learning-rate setting.
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

#include "training/optimizer_type.h"

namespace medseg::training {

struct OptimizerConfig {
  OptimizerType type = OptimizerType::SGD;
  double lr = 1e-2;
  double weight_decay = 3e-5;
  double momentum = 0.99;                         // SGD
  bool nesterov = true;                           // SGD
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam, AdamW
  bool amsgrad = false;                           // Adam, AdamW (nnUNetTrainerAdam: AdamW with amsgrad)

  static OptimizerConfig nnunet_sgd() { return {}; }
  // MONAI's SwinUNETR recipe (AdamW, lr 1e-4, weight decay 1e-5).
  static OptimizerConfig adamw(double lr = 1e-4, double weight_decay = 1e-5) {
    OptimizerConfig c;
    c.type = OptimizerType::AdamW;
    c.lr = lr;
    c.weight_decay = weight_decay;
    return c;
  }
};

// Each parameter once, even when a submodule is registered under two names (LibTorch's
// parameters() lists it twice, which would apply momentum and weight decay twice).
std::vector<at::Tensor> unique_parameters(const torch::nn::Module& model);

// One parameter group over unique_parameters(model).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const torch::nn::Module& model, const OptimizerConfig& cfg);

// Sets the learning rate of every parameter group (SGD, Adam, AdamW).
void set_learning_rate(torch::optim::Optimizer& opt, double lr);
double learning_rate(const torch::optim::Optimizer& opt);

// Clips the global L2 norm of the gradients to max_norm (nnU-Net: 12); returns the norm before.
double clip_gradients(const std::vector<at::Tensor>& params, double max_norm = 12.0);

}  // namespace medseg::training
