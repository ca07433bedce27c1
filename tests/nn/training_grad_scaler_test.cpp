// GradScaler: skip-on-inf with backoff, growth after clean steps, exact unscaling, passthrough.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "core/error.h"
#include "training/grad_scaler.h"

using namespace medseg::training;

namespace {

struct Tiny {
  at::Tensor w = torch::tensor({1.0f, -2.0f, 3.0f}).requires_grad_(true);
  torch::optim::SGD opt{std::vector<at::Tensor>{w}, torch::optim::SGDOptions(0.1)};
  at::Tensor loss() { return (w * torch::tensor({0.5f, 0.25f, -1.0f})).pow(2).sum(); }
};

}  // namespace

TEST(TrainingGradScaler, InfGradientSkipsStepAndHalvesScale) {
  Tiny t;
  GradScaler s;
  EXPECT_EQ(s.scale_value(), 65536.0);
  t.opt.zero_grad();
  s.scale(t.loss()).backward();
  t.w.mutable_grad()[1] = std::numeric_limits<float>::infinity();
  const auto before = t.w.detach().clone();
  EXPECT_FALSE(s.step(t.opt));
  s.update();
  EXPECT_TRUE(torch::equal(t.w.detach(), before));
  EXPECT_EQ(s.scale_value(), 32768.0);
  EXPECT_EQ(s.growth_tracker(), 0);

  t.opt.zero_grad();  // a NaN is treated the same way
  s.scale(t.loss()).backward();
  t.w.mutable_grad()[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(s.step(t.opt));
  s.update();
  EXPECT_EQ(s.scale_value(), 16384.0);
}

TEST(TrainingGradScaler, ScaleDoublesAfterGrowthIntervalCleanSteps) {
  Tiny t;
  GradScaler s;  // default interval 2000
  for (int i = 0; i < 1999; ++i) {
    t.opt.zero_grad();
    s.scale(t.loss()).backward();
    ASSERT_TRUE(s.step(t.opt));
    s.update();
  }
  EXPECT_EQ(s.scale_value(), 65536.0);
  EXPECT_EQ(s.growth_tracker(), 1999);
  t.opt.zero_grad();
  s.scale(t.loss()).backward();
  s.step(t.opt);
  s.update();
  EXPECT_EQ(s.scale_value(), 131072.0);
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(TrainingGradScaler, CleanStreakIsResetByAnInf) {
  Tiny t;
  GradScalerOptions o;
  o.growth_interval = 3;
  GradScaler s(o);
  auto iteration = [&](bool inf) {
    t.opt.zero_grad();
    s.scale(t.loss()).backward();
    if (inf) t.w.mutable_grad()[2] = std::numeric_limits<float>::infinity();
    s.step(t.opt);
    s.update();
  };
  iteration(false);
  iteration(false);
  iteration(true);  // 65536 -> 32768, streak reset
  iteration(false);
  iteration(false);
  EXPECT_EQ(s.scale_value(), 32768.0);
  iteration(false);  // third clean step in a row
  EXPECT_EQ(s.scale_value(), 65536.0);
}

TEST(TrainingGradScaler, UnscaledGradientsEqualTrueGradients) {
  Tiny ref;
  ref.opt.zero_grad();
  ref.loss().backward();
  // d/dw (w*c)^2 = 2 c^2 w: [2*.25*1, 2*.0625*(-2), 2*1*3] = [0.5, -0.25, 6]
  EXPECT_TRUE(torch::allclose(ref.w.grad(), torch::tensor({0.5f, -0.25f, 6.0f})));

  Tiny t;
  GradScaler s;
  t.opt.zero_grad();
  s.scale(t.loss()).backward();
  EXPECT_TRUE(torch::equal(t.w.grad(), ref.w.grad() * 65536.0f));
  EXPECT_TRUE(s.unscale(t.opt));
  EXPECT_TRUE(torch::equal(t.w.grad(), ref.w.grad()));
  EXPECT_THROW(s.unscale(t.opt), medseg::Error);  // twice before update()
  EXPECT_TRUE(s.step(t.opt));                     // uses the recorded result, no second unscale
  s.update();
  EXPECT_TRUE(torch::allclose(t.w.detach(), torch::tensor({1.0f - 0.05f, -2.0f + 0.025f, 3.0f - 0.6f})));
}

TEST(TrainingGradScaler, Fp16LossIsScaledWithoutOverflow) {
  GradScaler s;
  const auto scaled = s.scale(torch::tensor({1.5f}).to(torch::kHalf));
  EXPECT_EQ(scaled.scalar_type(), torch::kFloat);
  EXPECT_EQ(scaled.item<float>(), 98304.0f);
}

TEST(TrainingGradScaler, DisabledIsPassthrough) {
  GradScalerOptions o;
  o.enabled = false;
  GradScaler s(o);
  Tiny t;
  const auto l = t.loss();
  EXPECT_TRUE(s.scale(l).is_same(l));
  l.backward();
  t.w.mutable_grad()[0] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(s.step(t.opt));  // no inf checks when disabled
  s.update();
  EXPECT_EQ(s.scale_value(), 1.0);
}

TEST(TrainingGradScaler, StateRoundTripsThroughJson) {
  Tiny t;
  GradScalerOptions o;
  o.growth_interval = 10;
  GradScaler a(o);
  for (int i = 0; i < 4; ++i) {
    t.opt.zero_grad();
    a.scale(t.loss()).backward();
    a.step(t.opt);
    a.update();
  }
  const auto j = a.state();
  EXPECT_EQ(j.at("growth_tracker"), 4);
  GradScaler b;
  b.load_state(j);
  EXPECT_EQ(b.scale_value(), a.scale_value());
  EXPECT_EQ(b.growth_tracker(), 4);
  EXPECT_EQ(b.state(), j);
}
