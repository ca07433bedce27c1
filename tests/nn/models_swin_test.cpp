// SwinUNETR: parameter counts (MONAI reference number and a closed-form formula), shapes, windows,
// masks, naming, in-place switch, checkpointing and its activation-memory saving.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "core/error.h"
#include "core_torch/torch_memory.h"
#include "models/network.h"
#include "models/swin_blocks.h"
#include "models/swin_unetr.h"

using namespace medseg;
using models::Shape;

namespace {

// Closed form from MONAI's layer list (depths 2,2,2,2, heads 3,6,12,24, window 7, mlp ratio 4,
// qkv bias; conv blocks without bias; instance norms without parameters).
int64_t swin_params(int64_t F, int64_t in, int64_t out, int dims, bool v2) {
  const int64_t k = dims == 3 ? 27 : 9, m = dims == 3 ? 8 : 4, table = dims == 3 ? 13 * 13 * 13 : 13 * 13;
  const int64_t heads[4] = {3, 6, 12, 24};
  auto res = [k](int64_t ci, int64_t co) { return ci * co * k + co * co * k + (ci != co ? ci * co : 0); };
  auto up = [&](int64_t ci, int64_t co) { return ci * co * m + res(2 * co, co); };
  int64_t n = in * F * m + F;  // patch embedding conv (kernel 2, bias)
  for (int i = 0; i < 4; ++i) {
    const int64_t d = F << i;
    const int64_t block =
        2 * d + table * heads[i] + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (4 * d * d + 4 * d) + (4 * d * d + d);
    n += 2 * block + 2 * m * d + m * d * 2 * d;  // two blocks + patch merging (norm + reduction)
    if (v2) n += res(d, d);
  }
  n += res(in, F) + res(F, F) + res(2 * F, 2 * F) + res(4 * F, 4 * F) + res(16 * F, 16 * F);
  n += up(16 * F, 8 * F) + up(8 * F, 4 * F) + up(4 * F, 2 * F) + up(2 * F, F) + up(F, F);
  return n + F * out + out;
}

models::SegmentationNetwork swin_network(int64_t F, int64_t in, int64_t out, bool v2 = false, int dims = 3,
                                         nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json kw = {{"feature_size", F}, {"use_v2", v2}, {"spatial_dims", dims}};
  kw.update(extra);
  return models::build_network({{"network_class_name", "medseg.SwinUNETR"}, {"arch_kwargs", kw}}, in, out);
}

double swin_rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(a.abs().max().item<double>(), 1e-12);
  return (a - b).abs().max().item<double>() / scale;
}

}  // namespace

TEST(ModelsSwin, ParameterCounts) {
  // 62,187,296: MONAI 1.3.0 SwinUNETR(feature_size=48, in 1, out 14) counted on torch 1.13.
  EXPECT_EQ(swin_network(48, 1, 14)->parameter_count(), 62187296);
  EXPECT_EQ(swin_params(48, 1, 14, 3, false), 62187296);
  // The others: formula above and scripts/bench/ref_models.py (python3-torch).
  EXPECT_EQ(swin_network(24, 1, 14)->parameter_count(), 15703304);
  EXPECT_EQ(swin_params(24, 1, 14, 3, false), 15703304);
  EXPECT_EQ(swin_network(48, 1, 14, true)->parameter_count(), 72762656);
  EXPECT_EQ(swin_params(48, 1, 14, 3, true), 72762656);
  EXPECT_EQ(swin_network(48, 4, 3)->parameter_count(), 62191941);
  EXPECT_EQ(swin_network(24, 1, 2, false, 2)->parameter_count(), 6302228);
  EXPECT_EQ(swin_params(24, 1, 2, 2, false), 6302228);
  EXPECT_EQ(swin_network(12, 2, 3, true)->parameter_count(), swin_params(12, 2, 3, 3, true));
}

TEST(ModelsSwin, ShapesAndInputCheck) {
  torch::NoGradGuard ng;
  auto net = swin_network(12, 2, 3);
  net->eval();
  auto y = net->forward(torch::zeros({1, 2, 32, 64, 32}));
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].sizes().vec(), (std::vector<int64_t>{1, 3, 32, 64, 32}));
  EXPECT_THROW(net->forward(torch::zeros({1, 2, 32, 48, 32})), Error);
  auto net2 = swin_network(12, 1, 2, true, 2);
  net2->eval();
  EXPECT_EQ(net2->forward(torch::zeros({2, 1, 64, 96}))[0].sizes().vec(), (std::vector<int64_t>{2, 2, 64, 96}));
  EXPECT_THROW(swin_network(16, 1, 2), Error);  // feature size not divisible by 12
}

TEST(ModelsSwin, WindowShrinksToFeatureMap) {
  auto [w, s] = models::get_window_size({3, 3, 3}, {7, 7, 7}, {3, 3, 3});
  EXPECT_EQ(w, (Shape{3, 3, 3}));
  EXPECT_EQ(s, (Shape{0, 0, 0}));
  std::tie(w, s) = models::get_window_size({8, 7, 14}, {7, 7, 7}, {3, 3, 3});
  EXPECT_EQ(w, (Shape{7, 7, 7}));
  EXPECT_EQ(s, (Shape{3, 0, 3}));
}

TEST(ModelsSwin, ShiftedWindowMask) {
  auto m = models::compute_mask({14, 14, 14}, {7, 7, 7}, {3, 3, 3}, torch::kCPU);
  ASSERT_EQ(m.sizes().vec(), (std::vector<int64_t>{8, 343, 343}));
  EXPECT_EQ(m[0].abs().sum().item<double>(), 0.0);  // first window lies in one region
  // Last window: each axis splits 4 | 3, so same-region pairs = (4^2 + 3^2)^3.
  EXPECT_EQ((m[7] == 0).sum().item<int64_t>(), 25 * 25 * 25);
  EXPECT_EQ((m[7] == -100).sum().item<int64_t>(), 343 * 343 - 25 * 25 * 25);
}

TEST(ModelsSwin, PatchMergingOrder) {
  // x[0, d, h, w, 0] = 4d + 2h + w on a 2x2x2 grid; MONAI >= 1.5 "merging" order of offsets.
  auto x = torch::arange(8, torch::kFloat32).view({1, 2, 2, 2, 1});
  auto y = models::merge_subgrids(x, 3).flatten();
  EXPECT_TRUE(torch::equal(y, torch::tensor({0.f, 4.f, 2.f, 1.f, 6.f, 5.f, 3.f, 7.f})));
  auto x2 = torch::arange(4, torch::kFloat32).view({1, 2, 2, 1});  // 2h + w
  EXPECT_TRUE(torch::equal(models::merge_subgrids(x2, 2).flatten(), torch::tensor({0.f, 2.f, 1.f, 3.f})));
}

TEST(ModelsSwin, StateDictNames) {
  auto net = swin_network(24, 1, 2, true);
  std::set<std::string> keys;
  for (const auto& kv : net->named_parameters()) keys.insert(kv.key());
  for (const char* k :
       {"swinViT.patch_embed.proj.weight", "swinViT.patch_embed.proj.bias",
        "swinViT.layers1.0.blocks.1.attn.relative_position_bias_table", "swinViT.layers1.0.blocks.0.attn.qkv.bias",
        "swinViT.layers2.0.blocks.0.mlp.linear1.weight", "swinViT.layers4.0.downsample.reduction.weight",
        "swinViT.layers4.0.downsample.norm.bias", "swinViT.layers3c.0.layer.conv1.conv.weight",
        "encoder1.layer.conv3.conv.weight", "encoder10.layer.conv2.conv.weight", "decoder5.transp_conv.conv.weight",
        "decoder1.conv_block.conv3.conv.weight", "out.conv.conv.bias"})
    EXPECT_TRUE(keys.count(k)) << k;
  EXPECT_FALSE(keys.count("decoder5.transp_conv.conv.bias"));
  auto buffers = net->named_buffers();
  auto* idx = buffers.find("swinViT.layers1.0.blocks.0.attn.relative_position_index");
  ASSERT_NE(idx, nullptr);
  EXPECT_EQ(idx->sizes().vec(), (std::vector<int64_t>{343, 343}));
  EXPECT_EQ((*idx)[0][0].item<int64_t>(), (6 * 13 + 6) * 13 + 6);  // zero offset -> table centre
  EXPECT_EQ((*idx)[0][342].item<int64_t>(), 0);
  EXPECT_EQ(idx->max().item<int64_t>(), 13 * 13 * 13 - 1);
}

namespace {
std::vector<torch::Tensor> swin_grads(nlohmann::json extra, bool inplace, int64_t seed = 3) {
  torch::manual_seed(seed);
  nlohmann::json kw = {{"feature_size", 12}};
  if (extra.is_object()) kw.update(extra);
  models::NetworkBuildOptions o;
  o.inplace = inplace;
  auto net = models::build_network({{"network_class_name", "SwinUNETR"}, {"arch_kwargs", kw}}, 1, 2, o);
  net->train();
  auto x = torch::randn({1, 1, 32, 32, 32});
  torch::manual_seed(1234);  // dropout / drop-path masks
  auto y = net->forward(x)[0];
  (y * y).mean().backward();
  std::vector<torch::Tensor> g;
  for (auto& p : net->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return g;
}
}  // namespace

TEST(ModelsSwin, InplaceGradientsIdentical) {
  auto a = swin_grads(nlohmann::json::object(), true), b = swin_grads(nlohmann::json::object(), false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-6, 1e-8)) << i;
}

TEST(ModelsSwin, CheckpointGradientsMatchWithDropout) {
  const nlohmann::json drops = {{"drop_rate", 0.1}, {"attn_drop_rate", 0.1}, {"dropout_path_rate", 0.3}};
  auto with = drops;
  with["use_checkpoint"] = true;
  auto a = swin_grads(drops, true), b = swin_grads(with, true);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(swin_rel_diff(a[i], b[i]), 1e-6) << i;
}

// Activation memory of one training step, SwinUNETR feature 24, batch 1. 64^3 here (96^3 takes too
// long on 2 cores for the unit suite; scripts/bench/bench_models.sh measures 96^3).
TEST(ModelsSwin, CheckpointCutsActivationMemory) {
  install_counting_cpu_allocator();
  auto step_peak = [](bool ckpt) {
    torch::manual_seed(0);
    models::NetworkBuildOptions o;
    o.use_checkpoint_override = ckpt;
    auto net =
        models::build_network({{"network_class_name", "SwinUNETR"}, {"arch_kwargs", {{"feature_size", 24}}}}, 1, 2, o);
    net->train();
    auto x = torch::randn({1, 1, 64, 64, 64});
    CpuPeakScope scope;  // parameters and input are already live
    {
      auto y = net->forward(x)[0];
      y.mean().backward();
    }
    return scope.peak_above_start();
  };
  const int64_t plain = step_peak(false), ckpt = step_peak(true);
  std::printf("SwinUNETR F24 64^3 step peak: %.1f MiB -> %.1f MiB with checkpointing\n", plain / 1048576.0,
              ckpt / 1048576.0);
  EXPECT_LE(static_cast<double>(ckpt), 0.7 * static_cast<double>(plain));
}

// The fused attention (in-place bias and mask) against the textbook formula written out per window
// and head: softmax(q k^T / sqrt(d) + B[rel(a, b)] + M[window]) v, then the output projection.
// Output and the gradients of the input and of the bias table must agree.
TEST(ModelsSwin, WindowAttentionEqualsNaiveFormula) {
  torch::manual_seed(3);
  const int64_t dim = 6, heads = 2, hd = dim / heads, n = 8, nw = 8, batch = 2;
  models::WindowAttention attn(models::WindowAttentionOptions(dim, heads, Shape{2, 2, 2}));
  auto params = attn->named_parameters();
  auto table = params["relative_position_bias_table"];
  {
    torch::NoGradGuard ng;
    table.normal_(0.0, 1.0);  // large enough to matter in the softmax
  }
  auto mask = models::compute_mask({4, 4, 4}, {2, 2, 2}, {1, 1, 1}, torch::kCPU);
  ASSERT_EQ(mask.size(0), nw);
  auto x = torch::randn({batch * nw, n, dim}, torch::requires_grad());
  auto y = attn->forward(x, mask);
  auto gy = torch::randn_like(y);
  auto g = torch::autograd::grad({y}, {x, table}, {gy});

  // Relative index of tokens a, b in a 2x2x2 window: (dz+1)*9 + (dy+1)*3 + (dx+1).
  auto rel = [](int64_t a, int64_t b) {
    auto c = [](int64_t t, int axis) { return axis == 0 ? t / 4 : axis == 1 ? (t / 2) % 2 : t % 2; };
    return (c(a, 0) - c(b, 0) + 1) * 9 + (c(a, 1) - c(b, 1) + 1) * 3 + (c(a, 2) - c(b, 2) + 1);
  };
  auto wq = params["qkv.weight"], bq = params["qkv.bias"];
  auto x2 = x.detach().clone().requires_grad_(true);
  auto table2 = table.detach().clone().requires_grad_(true);
  std::vector<torch::Tensor> outs;
  for (int64_t w = 0; w < batch * nw; ++w) {
    auto qkv = torch::addmm(bq, x2[w], wq.t());  // (n, 3 dim)
    std::vector<torch::Tensor> per_head;
    for (int64_t h = 0; h < heads; ++h) {
      auto q = qkv.slice(1, h * hd, (h + 1) * hd), k = qkv.slice(1, dim + h * hd, dim + (h + 1) * hd);
      auto v = qkv.slice(1, 2 * dim + h * hd, 2 * dim + (h + 1) * hd);
      std::vector<torch::Tensor> rows;
      for (int64_t a = 0; a < n; ++a) {
        std::vector<torch::Tensor> row;
        for (int64_t b = 0; b < n; ++b)
          row.push_back((q[a] * k[b]).sum() / std::sqrt(double(hd)) + table2[rel(a, b)][h] + mask[w % nw][a][b]);
        rows.push_back(torch::stack(row));
      }
      per_head.push_back(torch::softmax(torch::stack(rows), 1).matmul(v));
    }
    outs.push_back(torch::addmm(params["proj.bias"], torch::cat(per_head, 1), params["proj.weight"].t()));
  }
  auto y2 = torch::stack(outs);
  auto g2 = torch::autograd::grad({y2}, {x2, table2}, {gy});
  EXPECT_LT(swin_rel_diff(y, y2), 1e-5);
  EXPECT_LT(swin_rel_diff(g[0], g2[0]), 1e-5);
  EXPECT_LT(swin_rel_diff(g[1], g2[1]), 1e-5);
}
