// PolyLR against hand values, the optimizer factory's nnU-Net defaults, and gradient clipping.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "training/optimizer.h"
#include "training/schedule.h"

using namespace medseg::training;

TEST(TrainingSchedule, PolyLrMatchesHandValues) {
  EXPECT_DOUBLE_EQ(poly_lr(1e-2, 0, 1000), 1e-2);
  // 0.5^0.9 = 0.535886731268146...
  EXPECT_NEAR(poly_lr(1e-2, 500, 1000), 0.005358867312681466, 1e-17);
  // (1/1000)^0.9 = 10^-2.7 = 0.0019952623149688...: epoch 999 of 1000 gives ~2e-5
  EXPECT_NEAR(poly_lr(1e-2, 999, 1000), 1.9952623149688793e-05, 1e-19);
  EXPECT_EQ(poly_lr(1e-2, 1000, 1000), 0.0);
  EXPECT_NEAR(poly_lr(1e-4, 250, 1000), 7.718895067235705e-05, 1e-19);
  EXPECT_THROW(poly_lr(1e-2, 1001, 1000), medseg::Error);
  EXPECT_THROW(poly_lr(1e-2, 0, 0), medseg::Error);
}

// nnUNetTrainerCosAnneal's schedule against torch's CosineAnnealingLR(T_max = 1000) stepped with the epoch
// (the values Debian's python3-torch prints for lr 1e-2).
TEST(TrainingSchedule, CosineLrMatchesTorchsCosineAnnealingLR) {
  EXPECT_DOUBLE_EQ(cosine_lr(1e-2, 0, 1000), 0.01);
  EXPECT_NEAR(cosine_lr(1e-2, 250, 1000), 0.008535533905932738, 1e-17);
  EXPECT_NEAR(cosine_lr(1e-2, 500, 1000), 0.005, 1e-17);
  EXPECT_NEAR(cosine_lr(1e-2, 999, 1000), 2.467399070893439e-08, 1e-20);
  EXPECT_NEAR(cosine_lr(1e-2, 1000, 1000), 0.0, 1e-18);
  EXPECT_THROW(cosine_lr(1e-2, 1001, 1000), medseg::Error);
}

TEST(TrainingOptimizer, FactoryUsesNnUNetDefaults) {
  torch::nn::Linear lin(3, 2);
  auto sgd = make_optimizer(*lin, OptimizerConfig::nnunet_sgd());
  const auto& o = static_cast<const torch::optim::SGDOptions&>(sgd->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(o.lr(), 1e-2);
  EXPECT_DOUBLE_EQ(o.momentum(), 0.99);
  EXPECT_DOUBLE_EQ(o.weight_decay(), 3e-5);
  EXPECT_TRUE(o.nesterov());
  set_learning_rate(*sgd, poly_lr(1e-2, 999, 1000));
  EXPECT_DOUBLE_EQ(learning_rate(*sgd), poly_lr(1e-2, 999, 1000));

  auto adamw = make_optimizer(*lin, OptimizerConfig::adamw(3e-4, 1e-2));
  EXPECT_NE(dynamic_cast<torch::optim::AdamW*>(adamw.get()), nullptr);
  EXPECT_DOUBLE_EQ(learning_rate(*adamw), 3e-4);
  EXPECT_EQ(parse_optimizer_type("AdamW", "test"), OptimizerType::AdamW);
  EXPECT_STREQ(optimizer_type_name(OptimizerType::Adam), "Adam");
  try {
    parse_optimizer_type("RMSprop", "configs/x.json: optimizer.type");
    FAIL();
  } catch (const medseg::Error& e) {
    EXPECT_STREQ(e.what(), "configs/x.json: optimizer.type: unknown optimizer 'RMSprop' (use SGD, Adam or AdamW)");
  }
}

TEST(TrainingOptimizer, ClippingScalesToGlobalNorm12) {
  auto a = torch::zeros({2}, torch::requires_grad());
  auto b = torch::zeros({1}, torch::requires_grad());
  a.mutable_grad() = torch::tensor({30.f, 0.f});
  b.mutable_grad() = torch::tensor({40.f});  // global norm 50
  const double norm = clip_gradients({a, b}, 12.0);
  EXPECT_NEAR(norm, 50.0, 1e-5);
  EXPECT_NEAR(a.grad()[0].item<float>(), 30.f * 12.f / 50.f, 1e-4);
  EXPECT_NEAR(b.grad()[0].item<float>(), 40.f * 12.f / 50.f, 1e-4);
  // Below the limit nothing changes.
  a.mutable_grad() = torch::tensor({3.f, 4.f});
  b.mutable_grad() = torch::tensor({0.f});
  clip_gradients({a, b}, 12.0);
  EXPECT_FLOAT_EQ(a.grad()[0].item<float>(), 3.f);
}
