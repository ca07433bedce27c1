// Saving SGD/AdamW mid-training into a checkpoint and resuming into a freshly built model and
// optimizer continues bit-identically to an uninterrupted run (CPU, deterministic).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "support/test_support.h"
#include "training/optimizer.h"

using namespace medseg::training;
using namespace medseg::checkpoint;

namespace {

// A shared submodule too, so name-based state mapping sees an alias.
struct Net : torch::nn::Module {
  Net() {
    l1 = register_module("l1", torch::nn::Linear(6, 8));
    l2 = register_module("l2", torch::nn::Linear(8, 3));
    again = register_module("again", l1);
  }
  at::Tensor forward(const at::Tensor& x) { return l2(torch::tanh(l1(x))); }
  torch::nn::Linear l1{nullptr}, l2{nullptr}, again{nullptr};
};

void train_steps(Net& net, torch::optim::Optimizer& opt, int from, int to) {
  for (int s = from; s < to; ++s) {
    torch::manual_seed(1000 + s);  // the batch depends only on the step number
    const auto x = torch::randn({5, 6});
    const auto y = torch::randn({5, 3});
    opt.zero_grad();
    const auto loss = torch::mse_loss(net.forward(x), y);
    loss.backward();
    clip_gradients(unique_parameters(net), 12.0);
    opt.step();
  }
}

void check_resume_is_bit_identical(const OptimizerConfig& cfg) {
  medseg::test::TempDir dir("optresume");
  torch::manual_seed(0);
  auto straight = std::make_shared<Net>();
  auto opt_s = make_optimizer(*straight, cfg);
  train_steps(*straight, *opt_s, 0, 8);

  torch::manual_seed(0);
  auto first = std::make_shared<Net>();
  auto opt_f = make_optimizer(*first, cfg);
  train_steps(*first, *opt_f, 0, 4);
  Checkpoint ck;
  ck.epoch = 4;
  ck.weights = module_weights(*first);
  ck.optimizer = capture_optimizer_state(*opt_f, *first);
  save_checkpoint(dir / "mid.ck", ck);

  torch::manual_seed(777);  // different initialisation: everything must come from the file
  auto resumed = std::make_shared<Net>();
  auto opt_r =
      make_optimizer(*resumed, OptimizerConfig{cfg.type == OptimizerType::SGD ? OptimizerConfig::nnunet_sgd()
                                                                              : OptimizerConfig::adamw(0.5, 0.5)});
  const Checkpoint back = load_checkpoint(dir / "mid.ck");
  load_weights(*resumed, back.weights);
  restore_optimizer_state(*opt_r, *resumed, back.optimizer);
  EXPECT_DOUBLE_EQ(learning_rate(*opt_r), cfg.lr);
  train_steps(*resumed, *opt_r, 4, 8);

  const auto a = straight->named_parameters();
  const auto b = resumed->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::equal(a[i].value(), b[i].value())) << optimizer_type_name(cfg.type) << " " << a[i].key();
  // And the run actually moved the weights (the test would be vacuous otherwise).
  EXPECT_FALSE(torch::equal(first->l2->weight, resumed->l2->weight));
}

}  // namespace

TEST(TrainingOptimizerResume, SgdNesterovIsBitIdentical) {
  check_resume_is_bit_identical(OptimizerConfig::nnunet_sgd());
}

TEST(TrainingOptimizerResume, AdamWIsBitIdentical) {
  check_resume_is_bit_identical(OptimizerConfig::adamw(1e-2, 1e-2));
}

TEST(TrainingOptimizerResume, OptimizerTypeMismatchIsAnError) {
  auto net = std::make_shared<Net>();
  auto sgd = make_optimizer(*net, OptimizerConfig::nnunet_sgd());
  auto adamw = make_optimizer(*net, OptimizerConfig::adamw());
  const auto state = capture_optimizer_state(*sgd, *net);
  EXPECT_THROW(restore_optimizer_state(*adamw, *net, state), medseg::Error);
}

TEST(TrainingOptimizer, UniqueParametersSkipsAliases) {
  auto net = std::make_shared<Net>();
  EXPECT_EQ(net->parameters().size(), 6u);  // LibTorch lists the aliased l1 twice
  EXPECT_EQ(unique_parameters(*net).size(), 4u);
}
