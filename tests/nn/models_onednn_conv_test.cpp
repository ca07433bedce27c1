// OneDnnConv3d's own forward and backward against torch's conv3d and its autograd (the reference:
// LibTorch's native or oneDNN kernels, whichever it picks), on the shapes the networks use: 3x3x3
// with and without stride, odd extents that leave input voxels outside every window, anisotropic
// (1,3,3) kernels, 2x2x2 patch embedding, 1x1x1 heads, with and without bias, batch 1 and 2.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/layers.h"
#include "models/onednn_conv.h"

using namespace medseg::models;

namespace {

struct ConvCase {
  std::vector<int64_t> x, kernel, stride, padding;
  int64_t out;
  bool bias;
};

void expect_close(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double scale = std::max(1.0, b.abs().max().item<double>());
  EXPECT_LE((a - b).abs().max().item<double>(), 1e-4 * scale) << what;
}

}  // namespace

TEST(ModelsOneDnnConv, ForwardAndGradientsEqualTorchConv3d) {
  const std::vector<ConvCase> cases = {
      {{1, 5, 7, 9, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 4, true},
      {{1, 4, 9, 8, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, 6, false},   // odd extents: unvisited voxels
      {{1, 3, 5, 10, 11}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, 5, true},  // anisotropic
      {{1, 2, 8, 8, 8}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, 3, true},    // patch embedding
      {{1, 6, 4, 5, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 2, true},    // segmentation head
      {{2, 3, 6, 5, 7}, {3, 3, 3}, {2, 1, 2}, {1, 1, 1}, 4, true},    // batch 2, mixed stride
  };
  torch::manual_seed(3);
  for (const auto& c : cases) {
    SCOPED_TRACE(c10::str("x ", at::IntArrayRef(c.x), " kernel ", at::IntArrayRef(c.kernel), " stride ",
                          at::IntArrayRef(c.stride)));
    std::vector<int64_t> wshape{c.out, c.x[1]};
    wshape.insert(wshape.end(), c.kernel.begin(), c.kernel.end());
    const at::Tensor x0 = torch::randn(c.x), w0 = torch::randn(wshape), b0 = torch::randn({c.out});
    auto run = [&](bool mine) {
      at::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
      at::Tensor b = c.bias ? b0.clone().requires_grad_() : at::Tensor();
      const at::Tensor y =
          mine ? onednn_conv3d(x, w, b, c.stride, c.padding) : at::conv3d(x, w, b, c.stride, c.padding);
      torch::manual_seed(11);
      const at::Tensor g = torch::randn(y.sizes());
      y.backward(g);
      return std::vector<at::Tensor>{y.detach(), x.grad(), w.grad(), c.bias ? b.grad() : at::zeros({1})};
    };
    const auto mine = run(true), ref = run(false);
    expect_close(mine[0], ref[0], "output");
    expect_close(mine[1], ref[1], "input gradient");
    expect_close(mine[2], ref[2], "weight gradient");
    expect_close(mine[3], ref[3], "bias gradient");
  }
}

// The module takes its own path exactly where LibTorch would use its native kernels.
TEST(ModelsOneDnnConv, AppliesWhereTorchWouldUseItsNativePath) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "LibTorch built without oneDNN";
  const at::Tensor w3 = torch::zeros({48, 48, 3, 3, 3});
  EXPECT_TRUE(onednn_conv3d_applies(torch::zeros({1, 48, 16, 16, 16}), w3, {1, 1, 1}, {1, 1, 1}));   // 12288
  EXPECT_FALSE(onednn_conv3d_applies(torch::zeros({2, 48, 16, 16, 16}), w3, {1, 1, 1}, {1, 1, 1}));  // batch 2
  EXPECT_FALSE(onednn_conv3d_applies(torch::zeros({1, 48, 32, 16, 16}), w3, {1, 1, 1}, {1, 1, 1}));  // 24576
  EXPECT_FALSE(onednn_conv3d_applies(torch::zeros({1, 48, 16, 16, 16}, torch::kDouble), w3, {1, 1, 1}, {1, 1, 1}));
  EXPECT_FALSE(onednn_conv3d_applies(torch::zeros({1, 48, 16, 16, 16}), w3, {1, 1, 1}, {3, 3, 3}));  // pad > k-1
}

// Networks get it from make_conv: same parameters (names, shapes), same output as torch's Conv3d.
TEST(ModelsOneDnnConv, MakeConvBuildsItWithConv3dParameters) {
  torch::nn::AnyModule m = make_conv(3, 8, 16, {3}, {2}, true);
  auto* conv = m.ptr()->as<torch::nn::Conv3dImpl>();
  ASSERT_NE(conv, nullptr) << "He initialisation and checkpoint names rely on it being a Conv3d";
  std::vector<std::string> names;
  for (const auto& p : m.ptr()->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
  const at::Tensor x = torch::randn({1, 8, 9, 10, 11});
  const at::Tensor y = m.forward(x);
  expect_close(y, at::conv3d(x, conv->weight, conv->bias, {2, 2, 2}, {1, 1, 1}), "module output");
}
