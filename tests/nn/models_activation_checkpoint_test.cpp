// Activation checkpointing (lib/models/activation_checkpoint.h) and the counting CPU allocator
// (core_torch/torch_memory.h).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core_torch/autocast.h"
#include "core_torch/torch_memory.h"
#include "models/activation_checkpoint.h"
#include "models/network.h"
#include "nn/models_test_util.h"

using namespace medseg;

namespace {

struct MlpImpl : torch::nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 8));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::dropout(torch::gelu(fc1(x)), 0.5, is_training())); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(a.abs().max().item<double>(), 1e-12);
  return (a - b).abs().max().item<double>() / scale;
}

// Returns the gradients of all parameters (and of x when it requires grad) after one step.
std::vector<torch::Tensor> mlp_grads(bool ckpt, bool x_requires_grad) {
  torch::manual_seed(1);
  Mlp m;
  m->train();
  auto x = torch::randn({4, 16}).requires_grad_(x_requires_grad);
  torch::manual_seed(99);  // dropout mask source
  auto fn = [p = m.ptr()](const torch::Tensor& t) { return p->forward(t); };
  auto y = ckpt ? models::activation_checkpoint(fn, x, *m) : fn(x);
  (y * y).sum().backward();
  std::vector<torch::Tensor> g;
  for (auto& p : m->parameters()) g.push_back(p.grad().clone());
  if (x_requires_grad) g.push_back(x.grad().clone());
  return g;
}

}  // namespace

TEST(ModelsCheckpoint, GradientsMatchWithDropout) {
  for (bool xg : {true, false}) {
    auto a = mlp_grads(false, xg), b = mlp_grads(true, xg);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(rel_diff(a[i], b[i]), 1e-6) << i << " x.requires_grad=" << xg;
  }
}

TEST(ModelsCheckpoint, RngStreamContinuesAsWithoutCheckpoint) {
  // After backward the global RNG must be where the plain run left it (recompute restores it).
  mlp_grads(false, true);
  const auto after_plain = torch::rand({3});
  mlp_grads(true, true);
  const auto after_ckpt = torch::rand({3});
  EXPECT_TRUE(torch::equal(after_plain, after_ckpt));
}

TEST(ModelsCheckpoint, ReentersAutocastInBackward) {
  // Under CPU bf16 autocast the linear layers run in bf16; a recompute outside autocast would run in
  // fp32 and give different gradients.
  auto run = [](bool ckpt) {
    torch::manual_seed(1);
    Mlp m;
    m->eval();
    auto x = torch::randn({4, 16});
    torch::Tensor y;
    {
      AutocastGuard cast(false, true, at::kBFloat16);
      auto fn = [p = m.ptr()](const torch::Tensor& t) { return p->forward(t); };
      y = ckpt ? models::activation_checkpoint(fn, x, *m) : fn(x);
    }
    y.to(torch::kFloat32).pow(2).sum().backward();
    return m->fc1->weight.grad().clone();
  };
  EXPECT_EQ(rel_diff(run(false), run(true)), 0.0);
}

TEST(ModelsCheckpoint, PlainCallWithoutGrad) {
  Mlp m;
  torch::NoGradGuard ng;
  auto y = models::activation_checkpoint([p = m.ptr()](const torch::Tensor& t) { return p->forward(t); },
                                         torch::randn({2, 16}), *m);
  EXPECT_FALSE(y.requires_grad());
}

TEST(ModelsCheckpoint, UNetEncoderCheckpointMatches) {
  // ResEnc with Dropout3d so that the RNG replay matters.
  const test::Shapes k(3, {3, 3, 3}), s{{1, 1, 1}, {2, 2, 2}, {2, 2, 2}};
  auto arch = test::unet_arch("ResidualEncoderUNet", 3, {8, 16, 24}, k, s, {1, 2, 2}, {1, 1});
  arch["arch_kwargs"]["dropout_op"] = "torch.nn.modules.dropout.Dropout3d";
  arch["arch_kwargs"]["dropout_op_kwargs"] = {{"p", 0.2}};
  auto run = [&](bool ckpt) {
    torch::manual_seed(5);
    models::NetworkBuildOptions o;
    o.checkpoint_encoder = ckpt;
    auto net = models::build_network(arch, 1, 2, o);
    net->train();
    auto x = torch::randn({1, 1, 16, 16, 16});
    auto outs = net->forward(x);
    torch::Tensor loss = torch::zeros({});
    for (auto& y : outs) loss = loss + y.pow(2).mean();
    loss.backward();
    std::vector<torch::Tensor> g;
    for (auto& p : net->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  auto a = run(false), b = run(true);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(rel_diff(a[i], b[i]), 1e-6) << i;
}

TEST(TorchMemory, CountsLiveAndPeakBytes) {
  install_counting_cpu_allocator();
  ASSERT_TRUE(counting_cpu_allocator_installed());
  CpuPeakScope scope;
  const int64_t start = cpu_memory_stats().current_bytes;
  {
    auto a = torch::empty({1000}, torch::kFloat32);  // 4000 bytes
    EXPECT_EQ(cpu_memory_stats().current_bytes - start, 4000);
    auto b = torch::empty({250}, torch::kFloat64);  // 2000 bytes
    EXPECT_EQ(cpu_memory_stats().current_bytes - start, 6000);
  }
  EXPECT_EQ(cpu_memory_stats().current_bytes, start);
  EXPECT_EQ(scope.peak_above_start(), 6000);
}
