// Sliding-window inference against hand-computed facts: nnU-Net's step formula, the gaussian's
// closed form, and a network that is the identity (any correct weighting must give the input back).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "inference/sliding_window.h"
#include "nn/nnunet_window_reference.h"

using namespace medseg::inference;

TEST(SlidingWindow, StepsFollowNnUNetFormula) {
  // image 100, patch 64, step 0.5: n = ceil(36/32)+1 = 3, spacing 36/2 = 18.
  auto s = compute_steps({100, 64, 130}, {64, 64, 64}, 0.5);
  EXPECT_EQ(s[0], (std::vector<int64_t>{0, 18, 36}));
  EXPECT_EQ(s[1], (std::vector<int64_t>{0}));
  // 130: n = ceil(66/32)+1 = 4, spacing 22.
  EXPECT_EQ(s[2], (std::vector<int64_t>{0, 22, 44, 66}));
  // Rounding half to even: image 69, patch 64, step 0.5 -> n = 2, spacing 5 -> {0, 5};
  // image 67, patch 60, step 0.1 -> n = ceil(7/6)+1 = 3, spacing 3.5 -> {0, round(3.5)=4, 7}.
  EXPECT_EQ(compute_steps({69}, {64}, 0.5)[0], (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(compute_steps({67}, {60}, 0.1)[0], (std::vector<int64_t>{0, 4, 7}));
}

TEST(SlidingWindow, StepSizeOutsideZeroOneIsRefused) {
  // NaN passed the old "step_size <= 0 || step_size > 1" test and became a tile count by UB.
  for (const double bad : std::vector<double>{0.0, -0.5, 1.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(bad);
    try {
      compute_steps({67}, {60}, bad);
      ADD_FAILURE() << "accepted";
    } catch (const medseg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("sliding window: step_size"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("is not in (0, 1]"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(compute_steps({67}, {60}, 1.0)[0], (std::vector<int64_t>{0, 7}));  // 1 itself is a step
}

TEST(SlidingWindow, GaussianClosedForm) {
  // patch 8: centre 4, sigma 1; value = 10 * exp(-d^2/2) per axis.
  const auto g = gaussian_importance_map({8, 8, 8});
  EXPECT_NEAR(g[4][4][4].item<float>(), 10.0, 1e-5);
  EXPECT_NEAR(g[4][4][5].item<float>(), 10.0 * std::exp(-0.5), 1e-5);
  EXPECT_NEAR(g[0][4][3].item<float>(), 10.0 * std::exp(-8.0 - 0.5), 1e-5);
  // sigma 1 on a 20-wide axis: truncated beyond 4 sigma, zeros become the smallest nonzero value.
  const auto t = gaussian_importance_map({20}, 0.05);
  EXPECT_NEAR(t[10].item<float>(), 10.0, 1e-5);
  EXPECT_NEAR(t[14].item<float>(), 10.0 * std::exp(-8.0), 1e-7);
  EXPECT_NEAR(t[2].item<float>(), 10.0 * std::exp(-8.0), 1e-7);  // was 0 (distance 8 > 4)
}

namespace {
NetworkFn identity_net(int64_t classes) {
  return [classes](const at::Tensor& x) { return x.repeat_interleave(classes, 1) * 1.0; };
}
}  // namespace

TEST(SlidingWindow, IdentityNetworkGivesTheInputBack3D) {
  torch::manual_seed(0);
  const auto img = torch::randn({1, 37, 45, 50});
  SlidingWindowOptions o;
  o.patch_size = {16, 24, 24};
  o.mirror_axes = {0, 1, 2};
  o.max_batch = 16;
  o.half_accumulators = false;  // exact sums: the identity comes back to float precision
  const auto out = predict_sliding_window(identity_net(2), img, 2, o);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 37, 45, 50}));
  EXPECT_LT((out[0] - img[0]).abs().max().item<float>(), 1e-5);
  EXPECT_LT((out[1] - img[0]).abs().max().item<float>(), 1e-5);
}

TEST(SlidingWindow, ImageSmallerThanPatchIsPaddedAndCroppedBack) {
  const auto img = torch::rand({1, 10, 30, 7});
  SlidingWindowOptions o;
  o.patch_size = {16, 16, 16};
  o.use_gaussian = false;
  o.half_accumulators = false;
  const auto out = predict_sliding_window(identity_net(1), img, 1, o);
  ASSERT_EQ(out.sizes(), img.sizes());
  EXPECT_LT((out - img).abs().max().item<float>(), 1e-6);
}

TEST(SlidingWindow, TwoDimensionalPatchTilesSlices) {
  const auto img = torch::rand({1, 5, 40, 33});
  SlidingWindowOptions o;
  o.patch_size = {32, 32};
  o.mirror_axes = {0, 1};
  o.half_accumulators = false;
  int64_t tiles = 0;
  const auto out = predict_sliding_window(
      [&](const at::Tensor& x) {
        EXPECT_EQ(x.dim(), 4);  // the network sees 2D batches
        tiles += x.size(0);
        return x * 1.0;
      },
      img, 1, o);
  EXPECT_LT((out - img).abs().max().item<float>(), 1e-5);
  // nnU-Net's slice loop: each of the 5 slices once, 2 x 2 in-plane positions (40 and 33 against 32
  // at step 16: ceil(8 / 16) + 1 = 2 and ceil(1 / 16) + 1 = 2), 4 mirrored copies each.
  EXPECT_EQ(tiles, 5 * 2 * 2 * 4);
}

TEST(SlidingWindow, Fp16AccumulatorsAreNnUNetsArithmeticBitForBit) {
  torch::NoGradGuard ng;
  torch::manual_seed(4);
  auto conv = torch::nn::Conv3d(torch::nn::Conv3dOptions(1, 3, 3).padding(1));
  const auto net = [&](const at::Tensor& x) { return conv->forward(x); };
  // Odd sizes, several positions per axis, a patch whose corners underflow fp16 (32: 10 e^-24).
  const at::Tensor image = torch::randn({1, 40, 33, 52});
  const std::vector<int64_t> patch{32, 24, 32};
  for (const auto& mirror : std::vector<std::vector<int64_t>>{{}, {0, 1, 2}}) {
    const at::Tensor ref = medseg::test::nnunet_reference(net, image, 3, patch, mirror);
    for (int64_t batch : {1, 8}) {
      SlidingWindowOptions o;
      o.patch_size = patch;
      o.mirror_axes = mirror;
      o.max_batch = batch;
      const at::Tensor got = predict_sliding_window(net, image, 3, o);
      if (batch == 1) {  // nnU-Net's passes: bit for bit
        EXPECT_TRUE(torch::equal(got, ref))
            << mirror.size() << " mirror axes: max difference " << (got - ref).abs().max().item<float>();
        continue;
      }
      // Batched passes may round the convolution differently in fp32; that moves a logit by one fp16
      // step (2^-9 relative at most, the logits here are below 4) in a few voxels only.
      const float scale = ref.abs().max().item<float>();
      EXPECT_LE((got - ref).abs().max().item<float>(), scale * std::ldexp(1.0f, -9)) << mirror.size();
      EXPECT_GT((got == ref).to(at::kFloat).mean().item<float>(), 0.98f) << mirror.size();
    }
  }
  // fp32 accumulators are the exact weighted mean: they differ from nnU-Net's most where only the
  // gaussian's tails reach (the image's corners).
  SlidingWindowOptions o;
  o.patch_size = patch;
  o.half_accumulators = false;
  const at::Tensor exact = predict_sliding_window(net, image, 3, o);
  const at::Tensor ref = medseg::test::nnunet_reference(net, image, 3, patch, {});
  const float corner = (exact.select(1, 0).select(1, 0).select(1, 0) - ref.select(1, 0).select(1, 0).select(1, 0))
                           .abs()
                           .max()
                           .item<float>();
  const float centre = (exact.select(1, 20).select(1, 16).select(1, 26) - ref.select(1, 20).select(1, 16).select(1, 26))
                           .abs()
                           .max()
                           .item<float>();
  EXPECT_GT(corner, 10 * centre) << "corner " << corner << ", centre " << centre;
}

TEST(SlidingWindow, Fp16GaussianHasNnUNetsValuesAndNoZeros) {
  const at::Tensor h = gaussian_importance_map({32, 32, 32}, 1.0 / 8.0, 10.0, at::kHalf);
  ASSERT_EQ(h.scalar_type(), at::kHalf);
  EXPECT_FALSE((h == 0).any().item<bool>());
  // The corner, 10 e^-24 = 3.8e-10, is below fp16's smallest subnormal (2^-24 = 6e-8): it underflows
  // and is raised to the map's smallest nonzero value.
  EXPECT_EQ(h[0][0][0].item<float>(), h.min().item<float>());
  EXPECT_NEAR(gaussian_importance_map({32, 32, 32})[0][0][0].item<float>(), 10 * std::exp(-24.0), 1e-15);
  // Centre 10; one axis at the patch's edge: 10 e^-8 = 3.35e-3, a normal fp16 value (spacing 2^-19).
  EXPECT_EQ(h[16][16][16].item<float>(), 10.0f);
  EXPECT_NEAR(h[0][16][16].item<float>(), 10 * std::exp(-8.0), std::ldexp(1.0, -20));
}

TEST(SlidingWindow, MirroringAveragesFlippedPredictions) {
  // A network that adds a ramp along x is not flip-equivariant: with mirroring over x the ramp
  // averages to its mean, (0 + 15) / 2 = 7.5, everywhere.
  const auto img = torch::zeros({1, 16, 16, 16});
  auto ramp_net = [](const at::Tensor& x) { return x + torch::arange(16, x.options()).view({1, 1, 1, 1, 16}); };
  SlidingWindowOptions o;
  o.patch_size = {16, 16, 16};
  o.mirror_axes = {2};
  o.half_accumulators = false;
  const auto out = predict_sliding_window(ramp_net, img, 1, o);
  EXPECT_LT((out - 7.5).abs().max().item<float>(), 1e-5);
}
