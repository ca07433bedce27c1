// Instance norm of channels-last activations (models/channels_last_norm.h), against torch's own instance norm
// computed in double on the contiguous tensor, and at least as close to it as torch's float/bf16 contiguous
// kernel is: fp32 and bf16, batches of 1 and 2, with and without affine parameters, odd sizes, and a channel
// whose mean is large against its spread (where x^2 - mean^2, or a sum in float row after row, loses it). And the
// U-Nets run channels-last as they run contiguous: the same logits up to the convolutions' rounding.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <utility>

#include "models/channels_last_norm.h"
#include "models/network.h"
#include "nn/models_test_util.h"

using namespace medseg;

namespace {

torch::Tensor reference(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, double eps) {
  return torch::instance_norm(x.to(torch::kDouble).contiguous(), w.defined() ? w.to(torch::kDouble) : w,
                              b.defined() ? b.to(torch::kDouble) : b, {}, {}, true, 0.0, eps, false);
}

// Channels of different scales; channel 0 sits at 100 with a spread of 0.1.
torch::Tensor activations(int64_t n, int64_t c, std::vector<int64_t> spatial) {
  torch::manual_seed(3);
  std::vector<int64_t> shape{n, c};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  torch::Tensor x = torch::randn(shape) * torch::linspace(0.5, 3.0, c).view({1, c, 1, 1, 1}) + 0.7;
  x.select(1, 0).mul_(0.1).add_(100.0);
  return x.contiguous(at::MemoryFormat::ChannelsLast3d);
}

// Largest and mean absolute difference from the double reference.
std::pair<double, double> errors(const torch::Tensor& y, const torch::Tensor& ref) {
  const torch::Tensor d = (y.to(torch::kDouble) - ref).abs();
  return {d.max().item<double>(), d.mean().item<double>()};
}

// torch's own instance norm in y's precision on the contiguous tensor (what nnU-Net and medseg's contiguous
// path run): the accuracy to match.
torch::Tensor torch_norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  return torch::instance_norm(x.contiguous(), w, b, {}, {}, true, 0.0, 1e-5, false);
}

TEST(ModelsChannelsLastNorm, AsAccurateAsTorchsContiguousInstanceNorm) {
  c10::InferenceMode guard;
  for (int64_t n : {1, 2}) {
    for (bool affine : {false, true}) {
      const torch::Tensor x = activations(n, 5, {7, 9, 11});
      const torch::Tensor w = affine ? torch::rand({5}) + 0.5 : torch::Tensor();
      const torch::Tensor b = affine ? torch::randn({5}) : torch::Tensor();
      ASSERT_TRUE(models::channels_last_norm_applies(x, w));
      const torch::Tensor y = models::channels_last_instance_norm(x, w, b, 1e-5);
      EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast3d));
      EXPECT_EQ(y.scalar_type(), torch::kFloat);
      const torch::Tensor ref = reference(x, w, b, 1e-5);
      const auto [max_err, mean_err] = errors(y, ref);
      const auto [torch_max, torch_mean] = errors(torch_norm(x, w, b), ref);
      EXPECT_LT(max_err, 2 * torch_max + 1e-6) << "batch " << n << ", affine " << affine;
      EXPECT_LT(mean_err, 2 * torch_mean + 1e-7) << "batch " << n << ", affine " << affine;
      EXPECT_LT(max_err, 1e-4);  // the large-mean channel: float's resolution at 100 against a spread of 0.1
    }
  }
}

TEST(ModelsChannelsLastNorm, Bf16IsAsAccurateAsTorchsContiguousInstanceNorm) {
  c10::InferenceMode guard;
  const torch::Tensor x = activations(2, 4, {12, 16, 20}).to(torch::kBFloat16);
  const torch::Tensor w = torch::rand({4}) + 0.5, b = torch::randn({4});
  const torch::Tensor y = models::channels_last_instance_norm(x, w, b, 1e-5);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast3d));
  // The reference sees the same bf16 inputs: what is left is mostly the output's rounding to bf16.
  const torch::Tensor ref = reference(x, w, b, 1e-5);
  const auto [max_err, mean_err] = errors(y, ref);
  const auto [torch_max, torch_mean] = errors(torch_norm(x, w, b), ref);
  EXPECT_LE(max_err, 1.5 * torch_max + 1e-6);
  EXPECT_LE(mean_err, 1.5 * torch_mean + 1e-7);
}

TEST(ModelsChannelsLastNorm, AppliesOnlyWithoutGradientToChannelsLastCpuTensors) {
  const torch::Tensor cl = activations(1, 3, {4, 5, 6});
  {
    c10::InferenceMode guard;
    EXPECT_TRUE(models::channels_last_norm_applies(cl, {}));
    EXPECT_FALSE(models::channels_last_norm_applies(cl.contiguous(), {}));
    EXPECT_FALSE(models::channels_last_norm_applies(cl.to(torch::kDouble), {}));
    EXPECT_FALSE(models::channels_last_norm_applies(cl.select(2, 0), {}));  // 4-D
    const torch::Tensor empty = torch::empty({1, 3, 0, 4, 4}).contiguous(at::MemoryFormat::ChannelsLast3d);
    EXPECT_EQ(models::channels_last_instance_norm(empty, {}, {}, 1e-5).numel(), 0);
  }
  const torch::Tensor w = torch::ones({3}).requires_grad_(true);
  EXPECT_FALSE(models::channels_last_norm_applies(cl, w)) << "training needs torch's differentiable norm";
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(models::channels_last_norm_applies(cl, w));
}

// A PlainConvUNet and a ResEnc U-Net on a channels-last input with channels-last weights (the norms take the
// channels-last kernel): the contiguous run's logits up to the convolutions' summation order.
TEST(ModelsChannelsLastNorm, UNetsRunChannelsLastAsContiguous) {
  for (const std::string cls : {"PlainConvUNet", "ResidualEncoderUNet"}) {
    const test::Shapes k(3, {3, 3, 3}), s{{1, 1, 1}, {2, 2, 2}, {2, 2, 2}};
    const std::vector<int64_t> per =
        cls == "PlainConvUNet" ? std::vector<int64_t>{2, 2, 2} : std::vector<int64_t>{1, 2, 2};
    torch::manual_seed(11);
    models::NetworkBuildOptions o;
    o.deep_supervision = false;
    auto net = models::build_network(test::unet_arch(cls, 3, {8, 16, 24}, k, s, per, {1, 1}), 1, 3, o);
    net->eval();
    ASSERT_TRUE(net->supports_channels_last()) << cls;
    c10::InferenceMode guard;
    const torch::Tensor x = torch::randn({1, 1, 20, 24, 28});
    const torch::Tensor plain = net->forward(x).at(0);
    for (auto& p : net->parameters())
      if (p.dim() == 5) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast3d));
    const torch::Tensor cl = net->forward(x.contiguous(at::MemoryFormat::ChannelsLast3d)).at(0);
    const double scale = plain.abs().max().item<double>();
    EXPECT_LT((cl - plain).abs().max().item<double>(), 1e-4 * std::max(1.0, scale)) << cls;
  }
}

}  // namespace
