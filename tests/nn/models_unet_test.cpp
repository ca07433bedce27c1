// PlainConvUNet / ResidualEncoderUNet: parameter counts (closed-form formulas and reference numbers),
// output shapes, state-dict naming and initialisation.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "models/network.h"
#include "nn/models_test_util.h"

using namespace medseg;
using medseg::test::Shapes;

namespace {

const std::vector<int64_t> kFeat3d{32, 64, 128, 256, 320, 320};
const Shapes kIsoK(6, {3, 3, 3});
const Shapes kIsoS{{1, 1, 1}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}};
// Anisotropic CT-like topology (2.5 x 0.8 x 0.8 mm): in-plane-only convs and pooling first.
const std::vector<int64_t> kFeatAniso{32, 64, 128, 256, 320, 320, 320};
const Shapes kAnisoK{{1, 3, 3}, {1, 3, 3}, {3, 3, 3}, {3, 3, 3}, {3, 3, 3}, {3, 3, 3}, {3, 3, 3}};
const Shapes kAnisoS{{1, 1, 1}, {1, 2, 2}, {1, 2, 2}, {2, 2, 2}, {2, 2, 2}, {1, 2, 2}, {1, 2, 2}};
// 2d plan: 7 stages capped at 512 features.
const std::vector<int64_t> kFeat2d{32, 64, 128, 256, 512, 512, 512};
const Shapes kK2d(7, {3, 3});
const Shapes kS2d{{1, 1}, {2, 2}, {2, 2}, {2, 2}, {2, 2}, {2, 2}, {2, 2}};

std::vector<int64_t> rep(int64_t v, size_t n) { return std::vector<int64_t>(n, v); }
const std::vector<int64_t> kResEncBlocks6{1, 3, 4, 6, 6, 6};
const std::vector<int64_t> kResEncBlocks7{1, 3, 4, 6, 6, 6, 6};

models::SegmentationNetwork build(const nlohmann::json& arch, int64_t in, int64_t classes,
                                  models::NetworkBuildOptions o = {}) {
  return models::build_network(arch, in, classes, o);
}

std::vector<int64_t> spatial(const torch::Tensor& t) { return t.sizes().slice(2).vec(); }

}  // namespace

TEST(ModelsUNet, ResEncMReferenceCount) {
  // 102,350,575: counted with dynamic-network-architectures v0.4.4 (reference doc section 2).
  auto arch = test::unet_arch("ResidualEncoderUNet", 3, kFeat3d, kIsoK, kIsoS, kResEncBlocks6, rep(1, 5));
  auto net = build(arch, 1, 3);
  EXPECT_EQ(net->parameter_count(), 102350575);
  EXPECT_EQ(test::resenc_unet_params(1, kFeat3d, kIsoK, kIsoS, kResEncBlocks6, rep(1, 5), 3), 102350575);
  EXPECT_EQ(net->class_name(), "ResidualEncoderUNet");
}

TEST(ModelsUNet, PlainConvCountsMatchFormula) {
  struct Case {
    int dims;
    std::vector<int64_t> f;
    Shapes k, s;
    int64_t in, classes;
  };
  const std::vector<Case> cases{
      {3, kFeat3d, kIsoK, kIsoS, 1, 3}, {3, kFeatAniso, kAnisoK, kAnisoS, 2, 4}, {2, kFeat2d, kK2d, kS2d, 3, 2}};
  for (const auto& c : cases) {
    const size_t n = c.f.size();
    auto arch = test::unet_arch("PlainConvUNet", c.dims, c.f, c.k, c.s, rep(2, n), rep(2, n - 1));
    auto net = build(arch, c.in, c.classes);
    EXPECT_EQ(net->parameter_count(), test::plain_unet_params(c.in, c.f, c.k, c.s, rep(2, n), rep(2, n - 1), c.classes))
        << "stages " << n << " dims " << c.dims;
  }
}

TEST(ModelsUNet, PlainConvReferenceCounts) {
  // Second source: scripts/bench/ref_models.py (python3-torch) built with the same kwargs.
  auto iso = test::unet_arch("PlainConvUNet", 3, kFeat3d, kIsoK, kIsoS, rep(2, 6), rep(2, 5));
  EXPECT_EQ(build(iso, 1, 3)->parameter_count(), 31196399);
  auto aniso = test::unet_arch("PlainConvUNet", 3, kFeatAniso, kAnisoK, kAnisoS, rep(2, 7), rep(2, 6));
  EXPECT_EQ(build(aniso, 2, 4)->parameter_count(), 44579896);
  auto two = test::unet_arch("PlainConvUNet", 2, kFeat2d, kK2d, kS2d, rep(2, 7), rep(2, 6));
  EXPECT_EQ(build(two, 3, 2)->parameter_count(), 33472396);
}

TEST(ModelsUNet, ResEncCountsMatchFormula) {
  auto aniso = test::unet_arch("ResidualEncoderUNet", 3, kFeatAniso, kAnisoK, kAnisoS, kResEncBlocks7, rep(1, 6));
  EXPECT_EQ(build(aniso, 2, 4)->parameter_count(),
            test::resenc_unet_params(2, kFeatAniso, kAnisoK, kAnisoS, kResEncBlocks7, rep(1, 6), 4));
  EXPECT_EQ(build(aniso, 2, 4)->parameter_count(), 140404728);  // ref_models.py
  auto two = test::unet_arch("ResidualEncoderUNet", 2, kFeat2d, kK2d, kS2d, kResEncBlocks7, rep(1, 6));
  EXPECT_EQ(build(two, 3, 2)->parameter_count(),
            test::resenc_unet_params(3, kFeat2d, kK2d, kS2d, kResEncBlocks7, rep(1, 6), 2));
  EXPECT_EQ(build(two, 3, 2)->parameter_count(), 105917388);  // ref_models.py
}

TEST(ModelsUNet, ResEncDeepSupervisionShapes) {
  torch::NoGradGuard ng;
  auto arch = test::unet_arch("ResidualEncoderUNet", 3, kFeat3d, kIsoK, kIsoS, kResEncBlocks6, rep(1, 5));
  auto net = build(arch, 1, 3);
  net->eval();
  auto out = net->forward(torch::zeros({1, 1, 64, 64, 64}));
  ASSERT_EQ(out.size(), 5u);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t e = 64 >> i;
    EXPECT_EQ(out[i].sizes().vec(), (std::vector<int64_t>{1, 3, e, e, e}));
  }
  net->set_deep_supervision(false);
  out = net->forward(torch::zeros({1, 1, 64, 64, 64}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes().vec(), (std::vector<int64_t>{1, 3, 64, 64, 64}));
}

TEST(ModelsUNet, AnisotropicShapes) {
  torch::NoGradGuard ng;
  auto arch = test::unet_arch("PlainConvUNet", 3, kFeatAniso, kAnisoK, kAnisoS, rep(2, 7), rep(2, 6));
  auto net = build(arch, 2, 4);
  net->eval();
  auto out = net->forward(torch::zeros({1, 2, 8, 128, 64}));
  const Shapes want{{8, 128, 64}, {8, 64, 32}, {8, 32, 16}, {4, 16, 8}, {2, 8, 4}, {2, 4, 2}};
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(spatial(out[i]), want[i]) << i;
}

TEST(ModelsUNet, TwoDShapes) {
  torch::NoGradGuard ng;
  auto arch = test::unet_arch("ResidualEncoderUNet", 2, kFeat2d, kK2d, kS2d, kResEncBlocks7, rep(1, 6));
  auto net = build(arch, 3, 2);
  net->eval();
  EXPECT_EQ(net->spatial_dims(), 2);
  auto out = net->forward(torch::zeros({2, 3, 128, 64}));
  ASSERT_EQ(out.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(out[i].sizes().vec(), (std::vector<int64_t>{2, 2, 128 >> i, 64 >> i}));
}

TEST(ModelsUNet, StateDictNamesAndNoAliases) {
  auto arch = test::unet_arch("ResidualEncoderUNet", 3, kFeat3d, kIsoK, kIsoS, kResEncBlocks6, rep(1, 5));
  auto net = build(arch, 1, 3);
  std::set<std::string> keys;
  std::set<const void*> storages;
  for (const auto& kv : net->named_parameters()) {
    keys.insert(kv.key());
    storages.insert(kv.value().unsafeGetTensorImpl());
    EXPECT_EQ(kv.key().find("all_modules"), std::string::npos) << kv.key();
    EXPECT_NE(kv.key().rfind("decoder.encoder", 0), 0u) << kv.key();
  }
  EXPECT_EQ(keys.size(), storages.size());
  for (const char* k : {"encoder.stem.convs.0.conv.weight", "encoder.stem.convs.0.norm.weight",
                        "encoder.stages.0.blocks.0.conv1.conv.weight", "encoder.stages.1.blocks.0.conv2.norm.bias",
                        "encoder.stages.1.blocks.0.skip.1.conv.weight", "encoder.stages.1.blocks.0.skip.1.norm.weight",
                        "decoder.transpconvs.0.weight", "decoder.transpconvs.0.bias",
                        "decoder.stages.4.convs.0.conv.weight", "decoder.seg_layers.4.bias"})
    EXPECT_TRUE(keys.count(k)) << k;
  EXPECT_FALSE(keys.count("encoder.stages.1.blocks.0.skip.1.conv.bias"));  // projection conv has no bias

  auto plain = build(test::unet_arch("PlainConvUNet", 3, kFeat3d, kIsoK, kIsoS, rep(2, 6), rep(2, 5)), 1, 3);
  auto pk = plain->named_parameters();
  EXPECT_NE(pk.find("encoder.stages.0.0.convs.0.conv.weight"), nullptr);
  EXPECT_NE(pk.find("encoder.stages.5.0.convs.1.norm.weight"), nullptr);
}

TEST(ModelsUNet, HeInitAndZeroedLastNorm) {
  auto arch = test::unet_arch("ResidualEncoderUNet", 3, kFeat3d, kIsoK, kIsoS, kResEncBlocks6, rep(1, 5));
  torch::manual_seed(0);
  auto net = build(arch, 1, 3);
  auto p = net->named_parameters();
  // kaiming_normal_(a=0.01, fan_in): std = sqrt(2 / (1 + a^2) / fan_in), fan_in = 320 * 27.
  const auto w = *p.find("encoder.stages.4.blocks.1.conv1.conv.weight");
  const double want = std::sqrt(2.0 / (1.0 + 1e-4) / (320.0 * 27.0));
  EXPECT_NEAR(w.std().item<double>(), want, 0.01 * want);
  EXPECT_EQ(p.find("encoder.stages.4.blocks.1.conv1.conv.bias")->abs().sum().item<double>(), 0.0);
  EXPECT_EQ(p.find("decoder.seg_layers.0.bias")->abs().sum().item<double>(), 0.0);
  for (const auto& kv : p) {
    if (kv.key().find("conv2.norm.") != std::string::npos) {
      EXPECT_EQ(kv.value().abs().sum().item<double>(), 0.0) << kv.key();
    }
  }
  EXPECT_EQ(p.find("encoder.stages.4.blocks.1.conv1.norm.weight")->min().item<double>(), 1.0);
}

TEST(ModelsUNet, ShortNamesAndErrors) {
  auto arch = test::unet_arch("PlainConvUNet", 3, kFeat3d, kIsoK, kIsoS, rep(2, 6), rep(2, 5));
  arch["network_class_name"] = "PlainConvUNet";
  EXPECT_EQ(build(arch, 1, 2)->class_name(), "PlainConvUNet");
  auto bad = arch;
  bad["network_class_name"] = "foo.UNetPlusPlus";
  EXPECT_THROW(build(bad, 1, 2), Error);
  bad = arch;
  bad["arch_kwargs"]["strides"] = Shapes{{1, 1, 1}, {2, 2, 2}};
  EXPECT_THROW(build(bad, 1, 2), Error);
  bad = arch;
  bad["arch_kwargs"]["conv_op"] = "torch.nn.modules.conv.Conv1d";
  EXPECT_THROW(build(bad, 1, 2), Error);
}
