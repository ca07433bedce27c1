// Fine-tuning from nnssl checkpoints (training/pretrained_encoder.h, sharing/nnssl_checkpoint.h) against nnU-Net's
// procedure: scripts/nnssl_checkpoint_reference.py writes a checkpoint as nnssl saves one and loads it into
// dynamic-network-architectures' own downstream network as nnU-Net master's PretrainedTrainer does (the input
// projection repeated over two channels, the position embedding resized with torch's trilinear interpolation,
// both modules loaded strictly). medseg's network must then hold the same stem and encoder, and keep everything
// else as it was. Runs where scripts/test.sh provides nnU-Net's venv (MEDSEG_NNUNET_PYTHON).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "models/network.h"
#include "sharing/nnssl_checkpoint.h"
#include "sharing/torch_pickle.h"
#include "support/test_support.h"
#include "training/pretrained_encoder.h"

namespace medseg {
namespace {

using json = nlohmann::json;

json unet_architecture(const std::string& cls) {
  const json k3 = {3, 3, 3};
  json k = {{"n_stages", 3},
            {"features_per_stage", {8, 16, 24}},
            {"conv_op", "torch.nn.modules.conv.Conv3d"},
            {"kernel_sizes", {k3, k3, k3}},
            {"strides", {{1, 1, 1}, {2, 2, 2}, {2, 2, 2}}},
            {"n_conv_per_stage_decoder", {1, 1}},
            {"conv_bias", true},
            {"norm_op", "torch.nn.modules.instancenorm.InstanceNorm3d"},
            {"norm_op_kwargs", {{"eps", 1e-5}, {"affine", true}}},
            {"dropout_op", nullptr},
            {"dropout_op_kwargs", nullptr},
            {"nonlin", "torch.nn.modules.activation.LeakyReLU"},
            {"nonlin_kwargs", {{"inplace", true}}}};
  if (cls == "ResidualEncoderUNet")
    k["n_blocks_per_stage"] = {1, 2, 2};
  else
    k["n_conv_per_stage"] = {2, 2, 2};
  return {{"network_class_name", "dynamic_network_architectures.architectures.unet." + cls}, {"arch_kwargs", k}};
}

json primus_architecture() {
  return {{"network_class_name", "dynamic_network_architectures.architectures.primus.Primus"},
          {"arch_kwargs",
           {{"embed_dim", 48},
            {"patch_embed_size", {8, 8, 8}},
            {"eva_depth", 2},
            {"eva_numheads", 2},
            {"input_shape", {48, 32, 40}},
            {"init_values", 0.1},
            {"scale_attn_inner", true}}}};
}

bool alias(const std::string& k) {
  return k.rfind("decoder.encoder.", 0) == 0 || k.find(".all_modules.") != std::string::npos;
}

// Writes the reference for `arch`, loads its checkpoint into medseg's network of `architecture` and compares.
void expect_nnunet_finetuning(const std::string& arch, const json& architecture) {
  const char* python = std::getenv("MEDSEG_NNUNET_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "MEDSEG_NNUNET_PYTHON is not set (scripts/test.sh sets it)";
  test::TempDir d("nnssl");
  const std::string cmd = std::string(python) + " " + test::source_path("scripts/nnssl_checkpoint_reference.py") + " " +
                          d.path() + " --arch " + arch + " --in 2 --out 3 --pt_patch 32 32 32 --patch 48 32 40 > " +
                          d / "log.txt" + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_text(d / "log.txt");
  const std::string pth = d / "nnssl.pth";
  ASSERT_TRUE(sharing::is_torch_save_file(pth));
  sharing::NnsslCheckpoint ck = sharing::read_nnssl_checkpoint(pth);
  EXPECT_EQ(ck.citations.size(), 1u);
  const auto enc =
      training::pretrained_encoder_from_nnssl(std::move(ck.weights), ck.adaptation_plan, ck.citations, pth);
  EXPECT_EQ(enc.in_channels, 1);
  EXPECT_EQ(enc.patch_size, (std::vector<int64_t>{32, 32, 32}));
  auto net = models::build_network(architecture, 2, 3);
  std::map<std::string, at::Tensor> before;
  for (const auto& [name, t] : checkpoint::module_weights(*net)) before[name] = t.clone();
  const auto report = training::load_pretrained_encoder(*net, enc, {48, 32, 40});
  EXPECT_TRUE(report.channels_repeated);
  EXPECT_EQ(report.position_embedding_resized, arch == "primus");

  const sharing::PickleDocument ref = sharing::read_torch_file(d / "expected.pt");
  std::map<std::string, at::Tensor> want;
  for (const auto& [k, v] : ref->get("state_dict")->dict) want[k->s] = v->tensor;
  std::set<std::string> set_by_nnunet;
  for (const sharing::PickleValue* k : ref->get("encoder_keys")->items)
    if (!alias(k->s)) set_by_nnunet.insert(k->s);
  ASSERT_GT(set_by_nnunet.size(), 10u);
  int64_t same = 0;
  for (const auto& [name, t] : checkpoint::module_weights(*net)) {
    if (!set_by_nnunet.count(name)) {
      EXPECT_TRUE(torch::equal(t, before.at(name))) << name << " is not nnU-Net's to set, and changed";
      continue;
    }
    ASSERT_TRUE(want.count(name)) << name;
    ASSERT_EQ(t.sizes(), want.at(name).sizes()) << name;
    const double diff = (t - want.at(name)).abs().max().item<double>();
    EXPECT_LE(diff, 1e-6) << name << " differs from nnU-Net's by " << diff;
    ++same;
  }
  EXPECT_EQ(same, static_cast<int64_t>(set_by_nnunet.size())) << "nnU-Net set tensors medseg's network lacks";
  EXPECT_EQ(report.loaded, same);
}

TEST(PretrainedEncoder, ResidualEncoderUNetTakesNnsslsStemAndEncoderAsNnUNetDoes) {
  expect_nnunet_finetuning("resenc", unet_architecture("ResidualEncoderUNet"));
}

TEST(PretrainedEncoder, PlainConvUNetTakesItsFirstStageAsTheStem) {
  expect_nnunet_finetuning("plain", unet_architecture("PlainConvUNet"));
}

TEST(PretrainedEncoder, PrimusResizesThePositionEmbeddingToThePatch) {
  expect_nnunet_finetuning("primus", primus_architecture());
}

// Bad files, one clear error naming the file: an nnssl checkpoint cut short, and a torch file that is no nnssl
// checkpoint (the reference's expected.pt: a dict of another layout).
TEST(PretrainedEncoder, ATruncatedOrForeignCheckpointIsRefusedNamingTheFile) {
  const char* python = std::getenv("MEDSEG_NNUNET_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "MEDSEG_NNUNET_PYTHON is not set (scripts/test.sh sets it)";
  test::TempDir d("nnssl_bad");
  const std::string cmd = std::string(python) + " " + test::source_path("scripts/nnssl_checkpoint_reference.py") + " " +
                          d.path() + " --arch resenc --in 1 --out 2 --pt_patch 32 32 32 --patch 32 32 32 > " +
                          d / "log.txt" + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_text(d / "log.txt");
  const std::string whole = test::read_text(d / "nnssl.pth"), cut = d / "cut.pth";
  {
    std::ofstream out(cut, std::ios::binary);
    out.write(whole.data(), static_cast<std::streamsize>(whole.size() / 2));
  }
  for (const std::string& file : {cut, d / "expected.pt"}) {
    try {
      sharing::read_nnssl_checkpoint(file);
      FAIL() << file << " was read";
    } catch (const FileError& e) { EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what(); }
  }
  try {
    sharing::read_nnssl_checkpoint(d / "expected.pt");
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("nnssl checkpoint"), std::string::npos) << e.what();
  }
}

// Facts by hand: a one-channel stem over three channels is its weights / 3 each (the same response to three
// copies of one image); another architecture is refused naming the file and a tensor, with the network untouched.
TEST(PretrainedEncoder, SpreadsAOneChannelStemAndRefusesAnotherArchitecture) {
  auto donor = models::build_network(unet_architecture("ResidualEncoderUNet"), 1, 2);
  training::PretrainedEncoder enc;
  enc.weights = checkpoint::module_weights(*donor);
  enc.key_to_encoder = "encoder.stages";
  enc.key_to_stem = "encoder.stem";
  enc.keys_to_in_proj = {"encoder.stem.convs.0.conv"};
  enc.patch_size = {32, 32, 32};
  enc.source = "donor.pth";
  auto net = models::build_network(unet_architecture("ResidualEncoderUNet"), 3, 2);
  const auto r = training::load_pretrained_encoder(*net, enc, {32, 32, 32});
  EXPECT_TRUE(r.channels_repeated);
  std::map<std::string, at::Tensor> got;
  for (const auto& [n, t] : checkpoint::module_weights(*net)) got[n] = t;
  const at::Tensor w = donor->named_parameters()["encoder.stem.convs.0.conv.weight"];
  const at::Tensor x = torch::randn({1, 1, 6, 6, 6});
  const at::Tensor one = torch::conv3d(x, w),
                   three = torch::conv3d(x.repeat({1, 3, 1, 1, 1}), got.at("encoder.stem.convs.0.conv.weight"));
  EXPECT_TRUE(torch::allclose(one, three, 1e-5, 1e-6));

  auto plain = models::build_network(unet_architecture("PlainConvUNet"), 1, 2);
  const at::Tensor kept = plain->named_parameters()["encoder.stages.0.0.convs.0.conv.weight"].clone();
  try {
    training::load_pretrained_encoder(*plain, enc, {32, 32, 32});
    FAIL() << "a ResEnc encoder went into a PlainConvUNet";
  } catch (const FileError& e) { EXPECT_NE(std::string(e.what()).find("donor.pth"), std::string::npos) << e.what(); }
  EXPECT_TRUE(torch::equal(kept, plain->named_parameters()["encoder.stages.0.0.convs.0.conv.weight"]));
}

}  // namespace
}  // namespace medseg

namespace medseg {
namespace {

// A ResEnc U-Net of `stages` stages, `first_kernel` at stage 0 (and its stem), 3x3x3 elsewhere.
json resenc(int stages, const json& first_kernel) {
  json a = unet_architecture("ResidualEncoderUNet");
  json& k = a["arch_kwargs"];
  const std::vector<int> all_features = {8, 16, 24, 32};
  k["n_stages"] = stages;
  k["features_per_stage"] = std::vector<int>(all_features.begin(), all_features.begin() + stages);
  k["kernel_sizes"] = json::array();
  k["strides"] = json::array();
  k["n_blocks_per_stage"] = std::vector<int>(static_cast<std::size_t>(stages), 1);
  k["n_conv_per_stage_decoder"] = std::vector<int>(static_cast<std::size_t>(stages - 1), 1);
  for (int s = 0; s < stages; ++s) {
    k["kernel_sizes"].push_back(s == 0 ? first_kernel : json{3, 3, 3});
    k["strides"].push_back(s == 0 ? json{1, 1, 1} : json{2, 2, 2});
  }
  return a;
}

training::PretrainedEncoder encoder_of(models::SegmentationNetworkImpl& donor) {
  training::PretrainedEncoder enc;
  enc.weights = checkpoint::module_weights(donor);
  enc.key_to_encoder = "encoder.stages";
  enc.key_to_stem = "encoder.stem";
  enc.keys_to_in_proj = {"encoder.stem.convs.0.conv"};
  enc.patch_size = {32, 32, 32};
  enc.source = "donor.pth";
  return enc;
}

}  // namespace

// DynamicPretrainedTrainer's fit, by hand: a 4-stage encoder into a 3-stage network whose stem and first stage have
// 1x3x3 kernels: those take the pretrained 3x3x3 kernels' mean along the first axis, the fourth stage is left out;
// the other way round, the deeper network's fourth stage keeps its initialisation. Strict refuses both.
TEST(PretrainedEncoder, DynamicFitAveragesKernelsAndMatchesDepthAsDynamicPretrainedTrainer) {
  auto donor = models::build_network(resenc(4, {3, 3, 3}), 1, 2);
  const auto enc = encoder_of(*donor);
  auto net = models::build_network(resenc(3, {1, 3, 3}), 1, 2);
  EXPECT_THROW(training::load_pretrained_encoder(*net, enc, {32, 32, 32}), FileError);
  const auto r = training::load_pretrained_encoder(*net, enc, {32, 32, 32}, training::EncoderFit::Dynamic);
  auto mine = net->named_parameters();
  auto theirs = donor->named_parameters();
  for (const char* name : {"encoder.stem.convs.0.conv.weight", "encoder.stages.0.blocks.0.conv1.conv.weight"}) {
    ASSERT_EQ(mine[name].sizes(), (std::vector<int64_t>{mine[name].size(0), mine[name].size(1), 1, 3, 3})) << name;
    EXPECT_TRUE(torch::allclose(mine[name], theirs[name].mean(2, true), 1e-6, 1e-7)) << name;
  }
  EXPECT_TRUE(torch::equal(mine["encoder.stages.2.blocks.0.conv1.conv.weight"],
                           theirs["encoder.stages.2.blocks.0.conv1.conv.weight"]));
  EXPECT_EQ(r.kernels_averaged, 3);  // the stem's convolution and stage 0's two
  EXPECT_GT(r.left_out, 0);          // stage 3
  EXPECT_EQ(r.kept_initialised, 0);

  auto deeper = models::build_network(resenc(4, {3, 3, 3}), 1, 2);
  auto small = models::build_network(resenc(3, {3, 3, 3}), 1, 2);
  const at::Tensor fourth = deeper->named_parameters()["encoder.stages.3.blocks.0.conv1.conv.weight"].clone();
  const auto r2 =
      training::load_pretrained_encoder(*deeper, encoder_of(*small), {32, 32, 32}, training::EncoderFit::Dynamic);
  EXPECT_GT(r2.kept_initialised, 0);
  EXPECT_EQ(r2.left_out, 0);
  EXPECT_TRUE(torch::equal(fourth, deeper->named_parameters()["encoder.stages.3.blocks.0.conv1.conv.weight"]));
  EXPECT_TRUE(torch::equal(deeper->named_parameters()["encoder.stages.1.blocks.0.conv2.conv.weight"],
                           small->named_parameters()["encoder.stages.1.blocks.0.conv2.conv.weight"]));
}

}  // namespace medseg

namespace medseg {

// A pretraining network with a class token (nnU-Net's filter_state_dict and handle_pos_embed_resize): the token is
// left out and so is its position, the first row of the embedding.
TEST(PretrainedEncoder, AClassTokenAndItsPositionAreLeftOut) {
  auto donor = models::build_network(primus_architecture(), 1, 2);
  training::PretrainedEncoder enc;
  for (const auto& [name, t] : checkpoint::module_weights(*donor))
    enc.weights.emplace_back(name, name == "eva.pos_embed" ? torch::cat({torch::ones({1, 1, t.size(2)}), t}, 1) : t);
  enc.weights.emplace_back("eva.cls_token", torch::ones({1, 1, 48}));
  enc.key_to_encoder = "eva";
  enc.key_to_stem = "down_projection";
  enc.keys_to_in_proj = {"down_projection.proj"};
  enc.patch_size = {48, 32, 40};
  enc.source = "with_cls.pth";
  auto net = models::build_network(primus_architecture(), 1, 2);
  const auto r = training::load_pretrained_encoder(*net, enc, {48, 32, 40});
  EXPECT_FALSE(r.position_embedding_resized);
  EXPECT_TRUE(torch::equal(net->named_parameters()["eva.pos_embed"], donor->named_parameters()["eva.pos_embed"]));
}

}  // namespace medseg
