// medseg's InstanceNorm against torch's own instance_norm (the reference arithmetic): same output
// and gradients, with and without affine, 2D and 3D, and with an in-place LeakyReLU after it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/layers.h"
#include "models/unet_blocks.h"

using namespace medseg;

namespace {

void check_against_torch(std::vector<int64_t> shape, bool affine) {
  torch::manual_seed(11);
  const int64_t c = shape[1];
  models::InstanceNorm mine(models::InstanceNormOptions(c).eps(1e-5).affine(affine));
  if (affine) {
    torch::NoGradGuard ng;
    mine->weight.uniform_(0.5, 1.5);
    mine->bias.uniform_(-0.5, 0.5);
  }
  auto x = (torch::randn(shape) * 3 + 1).requires_grad_(true);
  auto x2 = x.detach().clone().requires_grad_(true);
  torch::Tensor w2, b2;
  if (affine) {
    w2 = mine->weight.detach().clone().requires_grad_(true);
    b2 = mine->bias.detach().clone().requires_grad_(true);
  }
  // Ours with the in-place activation (the case it exists for), torch's out of place.
  auto h = mine->forward(x);
  auto y = torch::leaky_relu_(h, 0.01);
  auto y2 = torch::leaky_relu(torch::nn::functional::instance_norm(
                                  x2, torch::nn::functional::InstanceNormFuncOptions().weight(w2).bias(b2).eps(1e-5)),
                              0.01);
  EXPECT_TRUE(torch::allclose(y, y2, 1e-6, 1e-6));
  auto g = torch::randn_like(y);
  std::vector<torch::Tensor> in{x}, in2{x2};
  if (affine) {
    in.push_back(mine->weight);
    in.push_back(mine->bias);
    in2.push_back(w2);
    in2.push_back(b2);
  }
  auto ga = torch::autograd::grad(std::vector<torch::Tensor>{y}, in, std::vector<torch::Tensor>{g});
  auto gb = torch::autograd::grad(std::vector<torch::Tensor>{y2}, in2, std::vector<torch::Tensor>{g});
  for (size_t i = 0; i < ga.size(); ++i) {
    const double scale = gb[i].abs().max().template item<double>();
    EXPECT_LE((ga[i] - gb[i]).abs().max().template item<double>(), 1e-5 * std::max(scale, 1.0)) << "input " << i;
  }
}

}  // namespace

TEST(ModelsLayers, InstanceNormMatchesTorch3d) { check_against_torch({2, 3, 5, 6, 7}, true); }
TEST(ModelsLayers, InstanceNormMatchesTorch2dNoAffine) { check_against_torch({3, 4, 9, 8}, false); }

TEST(ModelsLayers, InstanceNormParameterNames) {
  models::InstanceNorm affine(models::InstanceNormOptions(4).affine(true)), plain(models::InstanceNormOptions(4));
  auto names = affine->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
  EXPECT_TRUE(plain->named_parameters().is_empty());
  EXPECT_TRUE(affine->named_buffers().is_empty());
}

// The block Options share one base (BlockOptions) whose setters return the derived Options, so a chain may
// mix the shared and the block's own options in any order.
TEST(ModelsLayers, BlockOptionsChainInAnyOrder) {
  using medseg::models::BasicBlockDOptions;
  using medseg::models::LayerOptions;
  using medseg::models::StackedConvBlocksOptions;
  static_assert(std::is_same_v<decltype(BasicBlockDOptions(1, 2, {3}, LayerOptions()).layers(LayerOptions())),
                               BasicBlockDOptions&>);
  const auto o =
      BasicBlockDOptions(1, 2, {3, 3, 3}, LayerOptions()).layers(LayerOptions().dims(2)).stride({2, 2}).in_channels(5);
  EXPECT_EQ(o.in_channels(), 5);
  EXPECT_EQ(o.out_channels(), 2);
  EXPECT_EQ(o.kernel_size(), (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(o.stride(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(o.layers().dims(), 2);
  const auto s = StackedConvBlocksOptions(4, 8, {3, 3}, LayerOptions()).num_convs(3).out_channels(16);
  EXPECT_EQ(s.num_convs(), 3);
  EXPECT_EQ(s.out_channels(), 16);
  EXPECT_EQ(s.in_channels(), 4);
}
