// planning::forward_macs (network_flops.h): hand-counted multiply-accumulates of two small U-Nets, and, where
// scripts/test.sh provides nnU-Net's venv (MEDSEG_NNUNET_PYTHON), torch's own FlopCounterMode on the network
// nnU-Net builds from the same architecture block (scripts/network_flops_reference.py), odd sizes included.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json_io.h"
#include "planning/network_flops.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::planning;

namespace {

// A plans.json architecture block as nnU-Net writes it (class and op names importable by nnU-Net).
json flops_arch(const std::string& cls, const json& kwargs) {
  json k = kwargs;
  k["conv_op"] = "torch.nn.modules.conv.Conv3d";
  k["conv_bias"] = true;
  k["norm_op"] = "torch.nn.modules.instancenorm.InstanceNorm3d";
  k["norm_op_kwargs"] = {{"eps", 1e-5}, {"affine", true}};
  k["dropout_op"] = nullptr;
  k["dropout_op_kwargs"] = nullptr;
  k["nonlin"] = "torch.nn.LeakyReLU";
  k["nonlin_kwargs"] = {{"inplace", true}};
  return {{"network_class_name", cls},
          {"arch_kwargs", k},
          {"_kw_requires_import", {"conv_op", "norm_op", "dropout_op", "nonlin"}}};
}

// Two stages of 4 and 8 features, 3^3 kernels, stride 2 below; `blocks` is the encoder's per-stage key and count.
json tiny_unet(const std::string& cls, const std::string& blocks_key, int blocks, int decoder_convs) {
  return flops_arch("dynamic_network_architectures.architectures.unet." + cls,
                    {{"n_stages", 2},
                     {"features_per_stage", {4, 8}},
                     {"kernel_sizes", {{3, 3, 3}, {3, 3, 3}}},
                     {"strides", {{1, 1, 1}, {2, 2, 2}}},
                     {blocks_key, {blocks, blocks}},
                     {"n_conv_per_stage_decoder", {decoder_convs}}});
}
json tiny_plain() { return tiny_unet("PlainConvUNet", "n_conv_per_stage", 2, 2); }
json tiny_resenc() { return tiny_unet("ResidualEncoderUNet", "n_blocks_per_stage", 1, 1); }

int64_t macs_of(const json& arch, const std::vector<int>& patch, int in, int classes) {
  return forward_macs(architecture_from_json(arch, "test"), patch, in, classes);
}

}  // namespace

// 8^3, 1 -> 3 channels. Encoder: 1*4*27*512 + 4*4*27*512 + 4*8*27*64 + 8*8*27*64; decoder: transposed
// 8*4*8*64, convs 8*4*27*512 + 4*4*27*512, head 4*3*512.
TEST(NetworkFlops, PlainUNetByHand) {
  EXPECT_EQ(macs_of(tiny_plain(), {8, 8, 8}, 1, 3), 55296 + 221184 + 55296 + 110592 + 16384 + 442368 + 221184 + 6144);
}

// 8^3, 2 -> 2 channels. Stem 2*4*27*512; stage 0 (no projection) 2 x 4*4*27*512; stage 1: the skip's 1x1
// projection after the pool 4*8*64, convs 4*8*27*64 + 8*8*27*64; decoder 8*4*8*64 + 8*4*27*512 + 4*2*512.
TEST(NetworkFlops, ResidualEncoderUNetByHand) {
  EXPECT_EQ(macs_of(tiny_resenc(), {8, 8, 8}, 2, 2),
            110592 + 2 * 221184 + 2048 + 55296 + 110592 + 16384 + 442368 + 4096);
}

TEST(NetworkFlops, OtherNetworksAreRefused) {
  const json swin = {{"network_class_name", "medseg.SwinUNETR"}, {"arch_kwargs", {{"feature_size", 12}}}};
  EXPECT_THROW(macs_of(swin, {32, 32, 32}, 1, 2), Error);
}

// torch's FlopCounterMode (2 FLOPs per multiply-accumulate) on nnU-Net's own networks: the two above, an
// anisotropic 4-stage PlainConvUNet on a patch whose sizes halve to odd ones, and a ResEnc with projections.
TEST(NetworkFlops, EqualTorchsFlopCounterOnNnunetsNetworks) {
  const char* python = std::getenv("MEDSEG_NNUNET_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "MEDSEG_NNUNET_PYTHON is not set (scripts/test.sh sets it)";
  struct Spec {
    json arch;
    std::vector<int> patch;
    int in, classes;
  };
  json plain4 = tiny_plain();
  plain4["arch_kwargs"]["n_stages"] = 4;
  plain4["arch_kwargs"]["features_per_stage"] = {8, 16, 32, 48};
  plain4["arch_kwargs"]["kernel_sizes"] = {{1, 3, 3}, {3, 3, 3}, {3, 3, 3}, {3, 3, 3}};
  plain4["arch_kwargs"]["strides"] = {{1, 1, 1}, {1, 2, 2}, {2, 2, 2}, {2, 2, 2}};
  plain4["arch_kwargs"]["n_conv_per_stage"] = {2, 2, 2, 2};
  plain4["arch_kwargs"]["n_conv_per_stage_decoder"] = {2, 2, 2};
  json resenc3 = tiny_resenc();
  resenc3["arch_kwargs"]["n_stages"] = 3;
  resenc3["arch_kwargs"]["features_per_stage"] = {6, 12, 24};
  resenc3["arch_kwargs"]["kernel_sizes"] = {{3, 3, 3}, {3, 3, 3}, {3, 3, 3}};
  resenc3["arch_kwargs"]["strides"] = {{1, 1, 1}, {2, 2, 2}, {2, 1, 2}};
  resenc3["arch_kwargs"]["n_blocks_per_stage"] = {1, 2, 3};
  resenc3["arch_kwargs"]["n_conv_per_stage_decoder"] = {1, 1};
  const std::vector<Spec> specs = {{tiny_plain(), {8, 8, 8}, 1, 3},
                                   {tiny_resenc(), {8, 8, 8}, 2, 2},
                                   {plain4, {12, 24, 40}, 2, 4},
                                   {resenc3, {20, 12, 28}, 1, 3}};
  test::TempDir d("flops");
  std::string args;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string file = d / ("spec" + std::to_string(i) + ".json");
    const json spec = {
        {"architecture", specs[i].arch}, {"in", specs[i].in}, {"classes", specs[i].classes}, {"patch", specs[i].patch}};
    std::ofstream(file) << spec.dump();
    args += " " + file;
  }
  const std::string out = d / "flops.txt", err = d / "log.txt";  // torch warns on stderr (no triton)
  const std::string cmd = std::string(python) + " " + test::source_path("scripts/network_flops_reference.py") + args +
                          " > " + out + " 2> " + err;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_text(out) << test::read_text(err);
  std::istringstream lines(test::read_text(out));
  for (const Spec& s : specs) {
    int64_t torch_flops = -1;
    lines >> torch_flops;
    EXPECT_EQ(2 * macs_of(s.arch, s.patch, s.in, s.classes), torch_flops) << s.arch.dump();
  }
}
