// Primus (models/primus.h): parameter counts against dynamic-network-architectures 0.4.4's Primus as nnU-Net's
// Primus trainers build it (the numbers were printed by that package on the meta device), the decoder's channels
// and the rotary embedding against hand-computed values, and, where scripts/test.sh provides nnU-Net's venv
// (MEDSEG_NNUNET_PYTHON), the forward pass against the Python network with the same weights
// (scripts/primus_reference.py).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>

#include "core_torch/autocast.h"
#include "core/error.h"
#include "models/primus.h"
#include "sharing/torch_pickle.h"
#include "support/test_support.h"

using namespace medseg;
using models::PrimusOptions;

namespace {

// A Primus trainer's network (primus_trainer_options' size) and the parameters dna 0.4.4 counts for it.
struct TrainerCount {
  const char* size;
  int64_t in, out;
  models::Shape shape;
  int64_t parameters;
};

void expect_trainer_counts(const std::vector<TrainerCount>& rows) {
  for (const TrainerCount& r : rows)
    EXPECT_EQ(models::primus_parameter_count(models::primus_trainer_options(r.size, r.in, r.out, r.shape)),
              r.parameters)
        << r.size;
}

}  // namespace

TEST(Primus, ParameterCountsAreThoseOfNnUNetsPrimusTrainers) {
  expect_trainer_counts({
      {"S", 1, 2, {64, 64, 64}, 23386526},
      {"S", 2, 4, {128, 96, 160}, 24974080},
      {"B", 1, 2, {64, 64, 64}, 92243498},
      {"B", 2, 4, {128, 96, 160}, 95516220},
      {"M", 1, 2, {64, 64, 64}, 145551770},
      {"M", 2, 4, {128, 96, 160}, 149178308},
      {"L", 1, 2, {64, 64, 64}, 324270626},
      {"L", 2, 4, {128, 96, 160}, 328698956},
  });
  // The built network holds what the formula counts.
  const auto s = models::primus_trainer_options("S", 1, 2, {64, 64, 64});
  EXPECT_EQ(models::Primus(s)->parameter_count(), 23386526);
  // Register tokens, no layer scale, no inner norm, an anisotropic patch embedding: 92491 in Python too.
  const auto small = PrimusOptions(2, 3, 48, 2, 2, {32, 16, 24}).patch_embed_size({8, 4, 8}).num_register_tokens(2);
  EXPECT_EQ(models::primus_parameter_count(small), 92491);
  EXPECT_EQ(models::Primus(small)->parameter_count(), 92491);
  EXPECT_THROW(models::primus_trainer_options("XL", 1, 2, {64, 64, 64}), Error);
}

// nnUNet_PrimusV2{S,B,M,L}_Trainer and V3's: the same transformers on PrimusV2's and PrimusV3's residual patch
// embeddings (PatchEmbed_deeper, PatchEmbedDeeperControlled), counted by dynamic-network-architectures 0.4.4 on
// the meta device as the trainers build them.
TEST(Primus, V2AndV3ParameterCountsAreThoseOfNnUNetsPrimusTrainers) {
  expect_trainer_counts({
      {"V2S", 1, 2, {64, 64, 64}, 24159518},
      {"V2S", 2, 4, {128, 96, 160}, 25545216},
      {"V2B", 1, 2, {64, 64, 64}, 92864426},
      {"V2B", 2, 4, {128, 96, 160}, 95732540},
      {"V2M", 1, 2, {64, 64, 64}, 146145050},
      {"V2M", 2, 4, {128, 96, 160}, 149330116},
      {"V2L", 1, 2, {64, 64, 64}, 324790178},
      {"V2L", 2, 4, {128, 96, 160}, 328678732},
      {"V3S", 1, 2, {64, 64, 64}, 70596165},
      {"V3S", 2, 4, {128, 96, 160}, 71981863},
      {"V3B", 1, 2, {64, 64, 64}, 148578165},
      {"V3B", 2, 4, {128, 96, 160}, 151446279},
      {"V3M", 1, 2, {64, 64, 64}, 203545533},
      {"V3M", 2, 4, {128, 96, 160}, 206730599},
      {"V3L", 1, 2, {64, 64, 64}, 386688645},
      {"V3L", 2, 4, {128, 96, 160}, 390577199},
  });
  EXPECT_EQ(models::Primus(models::primus_trainer_options("V2S", 1, 2, {64, 64, 64}))->parameter_count(), 24159518);
  EXPECT_EQ(models::Primus(models::primus_trainer_options("V3S", 1, 2, {64, 64, 64}))->parameter_count(), 70596165);
  EXPECT_THROW(models::primus_trainer_options("V4S", 1, 2, {64, 64, 64}), Error);
  // Three levels of stride 2 make patches of 8: another patch embedding size is refused.
  EXPECT_THROW(models::Primus(models::primus_trainer_options("V2S", 1, 2, {64, 64, 64}).patch_embed_size({4, 8, 8})),
               Error);
}

TEST(Primus, DecoderChannelsShrinkAsPatchDecodeRoundsThem) {
  // 396 / (396 / 4)^(k/3): 85.6 -> 88, 18.5 -> 16, then the classes.
  const auto plan = models::primus_decoder_plan(models::primus_trainer_options("S", 1, 2, {64, 64, 64}));
  EXPECT_EQ(plan.channels, (models::Shape{396, 88, 16, 2}));
  ASSERT_EQ(plan.strides.size(), 3u);
  for (const auto& s : plan.strides) EXPECT_EQ(s, (models::Shape{2, 2, 2}));
  // A side of 4 in a patch of 8: the first stage (from the tokens) leaves it.
  const auto aniso =
      models::primus_decoder_plan(PrimusOptions(2, 3, 48, 2, 2, {32, 16, 24}).patch_embed_size({8, 4, 8}));
  EXPECT_EQ(aniso.strides[0], (models::Shape{2, 1, 2}));
  EXPECT_EQ(aniso.strides[2], (models::Shape{2, 2, 2}));
}

TEST(Primus, RotaryEmbeddingIsSinAndCosOfEachAxisTimesEachBand) {
  // dim 16: 4 bands 10000^(-f/4); token (i, j, k) holds, per axis a and band f, sin(pos_a * band_f) twice.
  const models::Shape grid{3, 2, 4};
  const torch::Tensor emb = models::rotary_embedding_3d(grid, 16);
  ASSERT_EQ(emb.sizes(), (torch::IntArrayRef{24, 48}));
  const auto a = emb.accessor<float, 2>();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t token = (i * 2 + j) * 4 + k;
        const double pos[3] = {double(i), double(j), double(k)};
        for (int axis = 0; axis < 3; ++axis)
          for (int f = 0; f < 4; ++f) {
            const double angle = pos[axis] * std::pow(10000.0, -f / 4.0);
            for (int rep = 0; rep < 2; ++rep) {
              const int64_t col = (axis * 4 + f) * 2 + rep;
              EXPECT_NEAR(a[token][col], std::sin(angle), 1e-6) << token << " " << col;
              EXPECT_NEAR(a[token][24 + col], std::cos(angle), 1e-6) << token << " " << col;
            }
          }
      }
  // Applied to pairs (x0, x1) it rotates them by the angle.
  const torch::Tensor x = torch::tensor({1.0f, 2.0f}).view({1, 2});
  const torch::Tensor e = torch::tensor({0.6f, 0.6f, 0.8f, 0.8f}).view({1, 4});  // sin, sin, cos, cos
  const torch::Tensor y = models::apply_rotary(x, e);
  EXPECT_NEAR(y[0][0].item<float>(), 1 * 0.8 - 2 * 0.6, 1e-6);
  EXPECT_NEAR(y[0][1].item<float>(), 2 * 0.8 + 1 * 0.6, 1e-6);
}

TEST(Primus, TakesOnlyItsPatchSizeAndClonesIntoAnEqualNetwork) {
  torch::manual_seed(3);
  models::Primus net(PrimusOptions(1, 2, 48, 2, 2, {16, 16, 16}).init_values(0.1).scale_attn_inner(true));
  net->eval();
  const torch::Tensor x = torch::randn({1, 1, 16, 16, 16});
  const torch::Tensor y = net->forward(x)[0];
  EXPECT_EQ(y.sizes(), (torch::IntArrayRef{1, 2, 16, 16, 16}));
  auto copy = std::dynamic_pointer_cast<models::PrimusImpl>(net->clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(torch::equal(copy->forward(x)[0], y));
  EXPECT_EQ(copy->named_parameters().size(), net->named_parameters().size());
  EXPECT_NE(copy->named_parameters()["eva.pos_embed"].data_ptr(), net->named_parameters()["eva.pos_embed"].data_ptr());
  try {
    net->forward(torch::randn({1, 1, 16, 16, 24}));
    FAIL() << "a tile of another size";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the network takes inputs of its patch size only"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(models::Primus(PrimusOptions(1, 2, 48, 2, 2, {16, 16, 12})), Error);  // 12 is not a multiple of 8
  EXPECT_THROW(models::Primus(PrimusOptions(1, 2, 40, 2, 2, {16, 16, 16})), Error);  // 20 per head: no 3D rope
}

// Under CPU bf16 autocast (medseg_train --amp bf16) a Primus trains: bf16 products reach its layer norms, which
// LibTorch 1.13's kernel refused beside fp32 weights. With block checkpointing the gradients are the same.
TEST(Primus, TrainsUnderBf16AutocastWithAndWithoutBlockCheckpointing) {
  auto grads = [](bool checkpointing) {
    torch::manual_seed(5);
    models::Primus net(PrimusOptions(1, 2, 48, 2, 2, {16, 16, 16}).init_values(0.1).scale_attn_inner(true));
    net->train();
    net->set_checkpointing(checkpointing);
    const torch::Tensor x = torch::randn({2, 1, 16, 16, 16});
    torch::Tensor y;
    {
      AutocastGuard cast(false, true, at::kBFloat16);
      y = net->forward(x)[0];
    }
    const torch::Tensor loss = y.to(torch::kFloat32).pow(2).mean();
    EXPECT_TRUE(std::isfinite(loss.item<double>()));
    loss.backward();
    return net->named_parameters()["eva.blocks.1.mlp.fc2.weight"].grad().clone();
  };
  const torch::Tensor plain = grads(false), ckpt = grads(true);
  EXPECT_GT(plain.abs().sum().item<double>(), 0);
  EXPECT_TRUE(torch::equal(plain, ckpt));
}

namespace {

// Runs scripts/primus_reference.py with `args`, loads its state dict into a medseg Primus of `o` and compares
// the outputs on its input.
void expect_same_forward(const PrimusOptions& o, const std::string& args) {
  const char* python = std::getenv("MEDSEG_NNUNET_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "MEDSEG_NNUNET_PYTHON is not set (scripts/test.sh sets it)";
  test::TempDir d("primus");
  const std::string file = d / "reference.pt";
  const std::string cmd = std::string(python) + " " + test::source_path("scripts/primus_reference.py") + " " + file +
                          " " + args + " > " + d / "log.txt" + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_text(d / "log.txt");
  const sharing::PickleDocument doc = sharing::read_torch_file(file);
  models::Primus net(o);
  net->eval();
  auto params = net->named_parameters();
  auto buffers = net->named_buffers();
  const sharing::PickleValue* state = doc->get("state_dict");
  ASSERT_NE(state, nullptr);
  torch::NoGradGuard no_grad;
  size_t aliases = 0;  // ConvDropoutNormReLU's all_modules: a second name for its conv and norm, not registered here
  for (const auto& [key, value] : state->dict) {
    if (key->s.find(".all_modules.") != std::string::npos) {
      ++aliases;
      continue;
    }
    torch::Tensor* mine = params.find(key->s);
    if (mine == nullptr) mine = buffers.find(key->s);
    ASSERT_NE(mine, nullptr) << key->s << " is in Python's state dict but not in medseg's Primus";
    ASSERT_EQ(mine->sizes(), value->tensor.sizes()) << key->s;
    mine->copy_(value->tensor);
  }
  EXPECT_EQ(state->dict.size() - aliases, params.size() + buffers.size())
      << "medseg's Primus has tensors Python's lacks";
  EXPECT_EQ(net->parameter_count(), doc->get("parameters")->i);
  const torch::Tensor y = net->forward(doc->get("input")->tensor)[0], want = doc->get("output")->tensor;
  ASSERT_EQ(y.sizes(), want.sizes());
  const double diff = (y - want).abs().max().item<double>(), scale = want.abs().max().item<double>();
  EXPECT_LT(diff, 1e-5 * std::max(1.0, scale)) << "largest difference " << diff << " (outputs up to " << scale << ")";
}

}  // namespace

TEST(Primus, ForwardEqualsDynamicNetworkArchitecturesWithRegisterTokensAndAnAnisotropicPatchEmbedding) {
  expect_same_forward(PrimusOptions(2, 3, 48, 2, 2, {32, 16, 24})
                          .patch_embed_size({8, 4, 8})
                          .num_register_tokens(2)
                          .drop_path_rate(0.2),
                      "--in 2 --out 3 --embed 48 --depth 2 --heads 2 --patch 8 4 8 --shape 32 16 24 --register 2");
}

TEST(Primus, ForwardEqualsDynamicNetworkArchitecturesWithTheTrainersLayerScaleAndInnerNorm) {
  expect_same_forward(
      PrimusOptions(1, 2, 96, 3, 4, {16, 32, 24}).init_values(0.1).scale_attn_inner(true).drop_path_rate(0.2),
      "--in 1 --out 2 --embed 96 --depth 3 --heads 4 --patch 8 8 8 --shape 16 32 24 --init_values 0.1 "
      "--scale_attn_inner");
}

TEST(Primus, V2ForwardEqualsDynamicNetworkArchitectures) {
  expect_same_forward(models::with_residual_embedding(
                          PrimusOptions(2, 3, 48, 2, 2, {16, 32, 24}).init_values(0.1).drop_path_rate(0.2), 2),
                      "--in 2 --out 3 --embed 48 --depth 2 --heads 2 --patch 8 8 8 --shape 16 32 24 --init_values 0.1 "
                      "--version 2");
}

// V3 with its own depth_per_level and ch_per_level (two blocks at the middle level), with the skips onto the token
// grid and without them.
TEST(Primus, V3ForwardEqualsDynamicNetworkArchitecturesWithAndWithoutSkips) {
  for (bool skips : {true, false}) {
    SCOPED_TRACE(skips ? "add_skips" : "no skips");
    expect_same_forward(PrimusOptions(1, 2, 48, 2, 2, {16, 32, 24})
                            .drop_path_rate(0.2)
                            .embed_channels({8, 16, 24, 32})
                            .embed_depths({1, 2, 1})
                            .embed_leaky_relu(true)
                            .embed_add_skips(skips),
                        std::string("--in 1 --out 2 --embed 48 --depth 2 --heads 2 --patch 8 8 8 --shape 16 32 24 "
                                    "--version 3 --depth_per_level 1 2 1 --ch_per_level 8 16 24 32") +
                            (skips ? "" : " --no_skips"));
  }
}
