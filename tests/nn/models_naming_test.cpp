// lib/models written in LibTorch's module idiom. Refactoring guards: the state-dict keys (names and
// shapes) of a small PlainConvUNet, ResidualEncoderUNet and SwinUNETR, and their seeded forward
// outputs, must not change (nnU-Net model import and every existing checkpoint depend on the keys).
// And each block prints itself, options included, as torch::nn::Conv3d does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "models/monai_blocks.h"
#include "models/network.h"
#include "models/swin_blocks.h"
#include "models/unet_blocks.h"
#include "nn/models_naming_data.h"
#include "nn/models_test_util.h"

using namespace medseg;

namespace {

struct NetCase {
  const char* name;
  nlohmann::json arch;
  std::vector<int64_t> input;  // N, C, spatial
};

void PrintTo(const NetCase& c, std::ostream* os) { *os << c.name; }

nlohmann::json swin_arch() {
  return {{"network_class_name", "medseg.SwinUNETR"},
          {"arch_kwargs",
           {{"feature_size", 12},
            {"depths", {1, 1, 1, 1}},
            {"num_heads", {3, 6, 12, 24}},
            {"window_size", 7},
            {"use_v2", true},
            {"spatial_dims", 3}}}};
}

std::vector<NetCase> net_cases() {
  using test::Shapes;
  const Shapes k3(3, {3, 3, 3});
  const Shapes s3{{1, 1, 1}, {2, 2, 2}, {2, 2, 2}};
  return {
      {"PlainConvUNet", test::unet_arch("PlainConvUNet", 3, {4, 8, 16}, k3, s3, {2, 2, 2}, {1, 1}), {1, 1, 16, 16, 16}},
      {"ResidualEncoderUNet",
       test::unet_arch("ResidualEncoderUNet", 3, {4, 8, 16}, k3, s3, {1, 2, 2}, {1, 1}),
       {1, 1, 16, 16, 16}},
      {"SwinUNETR", swin_arch(), {1, 1, 32, 32, 32}},
  };
}

models::SegmentationNetwork build_seeded(const NetCase& c) {
  torch::manual_seed(0);
  return models::build_network(c.arch, 1, 2);
}

// "name [d0, d1, ...]" for every parameter and buffer, in registration order.
std::vector<std::string> keys_with_shapes(const torch::nn::Module& m) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name, const torch::Tensor& t) {
    std::ostringstream s;
    s << name << " " << t.sizes();
    out.push_back(s.str());
  };
  for (const auto& p : m.named_parameters(true)) add(p.key(), p.value());
  for (const auto& b : m.named_buffers(true)) add(b.key(), b.value());
  return out;
}

// Sum and sum of squares of the full-resolution logits, in double.
std::pair<double, double> output_checksum(models::SegmentationNetwork& net, const std::vector<int64_t>& input) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn(input);
  net->eval();
  torch::NoGradGuard ng;
  const torch::Tensor y = net->forward(x).front().to(torch::kDouble);
  return {y.sum().item<double>(), y.square().sum().item<double>()};
}

class ModelsNaming : public ::testing::TestWithParam<NetCase> {
 protected:
  void SetUp() override {
    threads_ = torch::get_num_threads();
    torch::set_num_threads(1);  // a fixed reduction order for the checksums
  }
  void TearDown() override { torch::set_num_threads(threads_); }
  int threads_ = 1;
};

}  // namespace

TEST_P(ModelsNaming, StateDictKeysAndShapesAsCapturedBeforeTheModuleRefactoring) {
  const NetCase& c = GetParam();
  auto net = build_seeded(c);
  const std::vector<std::string> got = keys_with_shapes(*net);
  if (const char* dump = std::getenv("MEDSEG_DUMP_NAMING")) {
    std::ofstream f(std::string(dump) + "/" + c.name + ".keys");
    for (const auto& k : got) f << k << "\n";
  }
  const std::vector<std::string>& want = test::naming_keys(c.name);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "key " << i;
}

TEST_P(ModelsNaming, SeededOutputAsCapturedBeforeTheModuleRefactoring) {
  // A refactoring guard only: the numbers were produced by this code on main before the blocks moved
  // to Options structs, not derived independently. They pin "same seed, same init order, same
  // arithmetic", which a pure restructuring must keep.
  const NetCase& c = GetParam();
  auto net = build_seeded(c);
  const auto [sum, sumsq] = output_checksum(net, c.input);
  if (const char* dump = std::getenv("MEDSEG_DUMP_NAMING")) {
    std::ofstream f(std::string(dump) + "/" + c.name + ".sum");
    f.precision(17);
    f << sum << " " << sumsq << "\n";
  }
  const auto [want_sum, want_sumsq] = test::naming_checksum(c.name);
  EXPECT_NEAR(sum, want_sum, 1e-6 * std::abs(want_sumsq) + 1e-9);
  EXPECT_NEAR(sumsq, want_sumsq, 1e-6 * std::abs(want_sumsq));
}

INSTANTIATE_TEST_SUITE_P(Nets, ModelsNaming, ::testing::ValuesIn(net_cases()),
                         [](const ::testing::TestParamInfo<NetCase>& i) { return std::string(i.param.name); });

namespace {

struct PrintCase {
  const char* name;
  std::function<std::shared_ptr<torch::nn::Module>()> make;
  std::vector<std::string> expected;  // substrings of the module's first printed line
};

void PrintTo(const PrintCase& c, std::ostream* os) { *os << c.name; }

using models::LayerOptions;
using models::Shape;

std::vector<PrintCase> print_cases() {
  const LayerOptions no_bias_relu = LayerOptions().conv_bias(false).nonlin(models::NonlinKind::kReLU).inplace(false);
  return {
      {"ConvDropoutNormReLU",
       [] {
         return models::ConvDropoutNormReLU(
                    models::ConvDropoutNormReLUOptions(4, 8, {3, 3, 1}, LayerOptions().dropout_p(0.25))
                        .stride({2, 2, 1}))
             .ptr();
       },
       {"medseg::models::ConvDropoutNormReLU(4, 8, kernel_size=[3, 3, 1], stride=[2, 2, 1]", "conv_bias=true",
        "norm=instance(eps=1e-05, affine=true)", "dropout=0.25", "nonlin=leaky_relu(0.01)", "inplace=true"}},
      {"ConvNormWithoutNonlin",
       [no_bias_relu] {
         return models::ConvDropoutNormReLU(
                    models::ConvDropoutNormReLUOptions(8, 8, {3}, no_bias_relu).with_nonlin(false))
             .ptr();
       },
       {"ConvDropoutNormReLU(8, 8, kernel_size=[3], stride=[1]", "conv_bias=false", "nonlin=none", "inplace=false"}},
      {"StackedConvBlocks",
       [no_bias_relu] {
         return models::StackedConvBlocks(
                    models::StackedConvBlocksOptions(2, 6, {3}, no_bias_relu).num_convs(3).initial_stride({2}))
             .ptr();
       },
       {"medseg::models::StackedConvBlocks(2, 6, num_convs=3, kernel_size=[3], initial_stride=[2]", "nonlin=relu"}},
      {"BasicBlockD",
       [] {
         return models::BasicBlockD(
                    models::BasicBlockDOptions(8, 16, {3, 3, 3}, LayerOptions().norm(models::NormKind::kBatch))
                        .stride({2, 2, 2}))
             .ptr();
       },
       {"medseg::models::BasicBlockD(8, 16, kernel_size=[3, 3, 3], stride=[2, 2, 2]", "norm=batch(eps=1e-05"}},
      {"StackedResidualBlocks",
       [] {
         return models::StackedResidualBlocks(
                    models::StackedResidualBlocksOptions(4, 4, {3}, LayerOptions()).n_blocks(2))
             .ptr();
       },
       {"medseg::models::StackedResidualBlocks(4, 4, n_blocks=2, kernel_size=[3], initial_stride=[1]"}},
      {"SwinTransformerBlock",
       [] {
         return models::SwinTransformerBlock(models::SwinTransformerBlockOptions(24, 3, {7, 7, 7})
                                                 .shift_size({3, 3, 3})
                                                 .drop_path(0.125)
                                                 .use_checkpoint(true))
             .ptr();
       },
       {"medseg::models::SwinTransformerBlock(dim=24, num_heads=3, window_size=[7, 7, 7], shift_size=[3, 3, 3]",
        "mlp_ratio=4", "drop_path=0.125", "use_checkpoint=true"}},
      {"WindowAttention",
       [] {
         return models::WindowAttention(models::WindowAttentionOptions(12, 3, {4, 4}).attn_drop(0.5)).ptr();
       },
       {"medseg::models::WindowAttention(dim=12, num_heads=3, window_size=[4, 4], qkv_bias=true, attn_drop=0.5"}},
      {"BasicLayer",
       [] {
         return models::BasicLayer(models::BasicLayerOptions(12, 2, 3, {7, 7, 7})).ptr();
       },
       {"medseg::models::BasicLayer(dim=12, depth=2, num_heads=3, window_size=[7, 7, 7]"}},
      {"PatchMerging",
       [] { return models::PatchMerging(models::PatchMergingOptions(12, 2)).ptr(); },
       {"medseg::models::PatchMerging(dim=12, spatial_dims=2)"}},
      {"InstanceNorm",
       [] { return models::InstanceNorm(models::InstanceNormOptions(8).eps(1e-3).affine(true)).ptr(); },
       {"medseg::models::InstanceNorm(8, eps=0.001, affine=true)"}},
      {"UnetrUpBlock",
       [] { return models::UnetrUpBlock(models::UnetrBlockOptions(3, 48, 24).inplace(false)).ptr(); },
       {"medseg::models::UnetrUpBlock(48, 24, spatial_dims=3, inplace=false)"}},
      {"PlainConvUNet",
       [] { return models::build_network(net_cases()[0].arch, 1, 2).ptr(); },
       {"medseg::models::PlainConvUNet(in_channels=1, num_classes=2, features_per_stage=[4, 8, 16]",
        "n_conv_per_stage=[2, 2, 2]", "n_conv_per_stage_decoder=[1, 1]", "deep_supervision=true"}},
      {"SwinUNETR",
       [] { return models::build_network(swin_arch(), 1, 2).ptr(); },
       {"medseg::models::SwinUNETR(in_channels=1, out_channels=2, feature_size=12, depths=[1, 1, 1, 1]",
        "use_v2=true"}},
  };
}

class ModelsPrettyPrint : public ::testing::TestWithParam<PrintCase> {};

}  // namespace

TEST_P(ModelsPrettyPrint, FirstLineNamesTheBlockAndItsOptions) {
  const PrintCase& c = GetParam();
  std::ostringstream printed;
  printed << *c.make();
  const std::string first_line = printed.str().substr(0, printed.str().find('\n'));
  for (const auto& e : c.expected) EXPECT_NE(first_line.find(e), std::string::npos) << e << "\nin: " << first_line;
}

INSTANTIATE_TEST_SUITE_P(Blocks, ModelsPrettyPrint, ::testing::ValuesIn(print_cases()),
                         [](const ::testing::TestParamInfo<PrintCase>& i) { return std::string(i.param.name); });
