// The `inplace` switch (LeakyReLU and residual additions in place or not) must not change the math:
// gradients with it on and off are identical for the same weights and input.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/error.h"
#include "models/network.h"
#include "training/trainer_config.h"
#include "nn/models_test_util.h"

using namespace medseg;

namespace {

// Small nets keep this fast: 3 stages, 16^3 patch.
nlohmann::json inplace_small_unet(const std::string& cls) {
  const test::Shapes k(3, {3, 3, 3}), s{{1, 1, 1}, {2, 2, 2}, {1, 2, 2}};
  const std::vector<int64_t> per =
      cls == "PlainConvUNet" ? std::vector<int64_t>{2, 2, 2} : std::vector<int64_t>{1, 2, 2};
  return test::unet_arch(cls, 3, {8, 16, 24}, k, s, per, {1, 1});
}

std::map<std::string, torch::Tensor> grads_after_step(const nlohmann::json& arch, bool inplace,
                                                      const torch::Tensor& x) {
  torch::manual_seed(7);
  models::NetworkBuildOptions o;
  o.inplace = inplace;
  auto net = models::build_network(arch, x.size(1), 3, o);
  net->train();
  auto outs = net->forward(x);
  torch::manual_seed(11);
  torch::Tensor loss = torch::zeros({});
  for (auto& y : outs) loss = loss + (y * torch::randn_like(y)).sum();
  loss.backward();
  std::map<std::string, torch::Tensor> g;
  for (const auto& kv : net->named_parameters()) g[kv.key()] = kv.value().grad().clone();
  return g;
}

void expect_same_grads(const nlohmann::json& arch, const torch::Tensor& x) {
  auto a = grads_after_step(arch, true, x);
  auto b = grads_after_step(arch, false, x);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [k, ga] : a) {
    ASSERT_TRUE(b.count(k)) << k;
    EXPECT_TRUE(torch::allclose(ga, b.at(k), /*rtol=*/1e-6, /*atol=*/1e-8)) << k;
  }
}

}  // namespace

TEST(ModelsInplace, ResEncGradientsIdentical) {
  torch::manual_seed(3);
  expect_same_grads(inplace_small_unet("ResidualEncoderUNet"), torch::randn({2, 2, 16, 16, 16}));
}

TEST(ModelsInplace, PlainConvGradientsIdentical) {
  torch::manual_seed(3);
  expect_same_grads(inplace_small_unet("PlainConvUNet"), torch::randn({2, 1, 16, 16, 16}));
}

// --inplace / the trainer config's "inplace": auto follows the plans' nonlin_kwargs.inplace on one
// process and is off under data parallelism; on/off are what they say.
TEST(ModelsInplace, TrainerSettingResolves) {
  using medseg::training::InplaceMode;
  using medseg::training::resolve_inplace;
  EXPECT_TRUE(resolve_inplace(InplaceMode::Auto, true, false));
  EXPECT_FALSE(resolve_inplace(InplaceMode::Auto, false, false));
  EXPECT_FALSE(resolve_inplace(InplaceMode::Auto, true, true));
  EXPECT_TRUE(resolve_inplace(InplaceMode::On, false, true));
  EXPECT_FALSE(resolve_inplace(InplaceMode::Off, true, false));
  const auto cfg = medseg::training::trainer_config_from_json({{"inplace", "off"}}, "t.json");
  EXPECT_EQ(cfg.inplace, InplaceMode::Off);
  EXPECT_EQ(cfg.to_json().at("inplace"), "off");
  EXPECT_THROW(medseg::training::trainer_config_from_json({{"inplace", "maybe"}}, "t.json"), medseg::Error);
}
