#include "training/optimizer.h"

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <unordered_set>

#include "core/error.h"

namespace medseg::training {

std::vector<at::Tensor> unique_parameters(const torch::nn::Module& model) {
  std::vector<at::Tensor> out;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& p : model.parameters(/*recurse=*/true))
    if (seen.insert(p.unsafeGetTensorImpl()).second) out.push_back(p);
  return out;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const torch::nn::Module& model, const OptimizerConfig& cfg) {
  auto params = unique_parameters(model);
  switch (cfg.type) {
    case OptimizerType::SGD: {
      auto o =
          torch::optim::SGDOptions(cfg.lr).momentum(cfg.momentum).weight_decay(cfg.weight_decay).nesterov(cfg.nesterov);
      return std::make_unique<torch::optim::SGD>(params, o);
    }
    case OptimizerType::AdamW: {
      auto o = torch::optim::AdamWOptions(cfg.lr)
                   .betas({cfg.beta1, cfg.beta2})
                   .eps(cfg.eps)
                   .weight_decay(cfg.weight_decay)
                   .amsgrad(cfg.amsgrad);
      return std::make_unique<torch::optim::AdamW>(params, o);
    }
    case OptimizerType::Adam: {
      auto o = torch::optim::AdamOptions(cfg.lr)
                   .betas({cfg.beta1, cfg.beta2})
                   .eps(cfg.eps)
                   .weight_decay(cfg.weight_decay)
                   .amsgrad(cfg.amsgrad);
      return std::make_unique<torch::optim::Adam>(params, o);
    }
  }
  throw Error("make_optimizer: unknown optimizer type");
}

void set_learning_rate(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) {
    auto& o = g.options();
    if (auto* s = dynamic_cast<torch::optim::SGDOptions*>(&o))
      s->lr(lr);
    else if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&o))
      adamw->lr(lr);
    else if (auto* adam = dynamic_cast<torch::optim::AdamOptions*>(&o))
      adam->lr(lr);
    else
      throw Error("set_learning_rate: unsupported optimizer");
  }
}

double learning_rate(const torch::optim::Optimizer& opt) {
  MEDSEG_CHECK(!opt.param_groups().empty(), "learning_rate: optimizer has no parameter groups");
  const auto& o = opt.param_groups().front().options();
  if (auto* s = dynamic_cast<const torch::optim::SGDOptions*>(&o)) return s->lr();
  if (auto* a = dynamic_cast<const torch::optim::AdamWOptions*>(&o)) return a->lr();
  if (auto* a = dynamic_cast<const torch::optim::AdamOptions*>(&o)) return a->lr();
  throw Error("learning_rate: unsupported optimizer");
}

double clip_gradients(const std::vector<at::Tensor>& params, double max_norm) {
  return torch::nn::utils::clip_grad_norm_(params, max_norm);
}

}  // namespace medseg::training
