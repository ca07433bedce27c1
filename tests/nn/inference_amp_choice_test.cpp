// What `--amp auto` means for prediction (inference::prediction_amp): the table in docs/predict.md, row by row, on
// processors described by hand, so every row is checked whatever this machine has.
#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "inference/predictor.h"

namespace {

using medseg::AmpMode;
using medseg::CpuFeatures;
using medseg::inference::prediction_amp;

CpuFeatures cpu(bool avx512f, bool avx512_bf16, bool amx_bf16) {
  CpuFeatures c;
  c.avx512f = avx512f;
  c.avx512_bf16 = avx512_bf16;
  c.amx_bf16 = amx_bf16;
  return c;
}

}  // namespace

TEST(PredictionAmp, AutoIsBf16OnlyOnACpuWithBf16Units) {
  EXPECT_EQ(prediction_amp(AmpMode::Auto, false, false, cpu(true, true, false)), AmpMode::Bf16);   // Zen 4
  EXPECT_EQ(prediction_amp(AmpMode::Auto, false, false, cpu(true, true, true)), AmpMode::Bf16);    // Sapphire Rapids
  EXPECT_EQ(prediction_amp(AmpMode::Auto, false, false, cpu(true, false, true)), AmpMode::Bf16);   // AMX alone
  EXPECT_EQ(prediction_amp(AmpMode::Auto, false, false, cpu(true, false, false)), AmpMode::Off);   // Skylake-X
  EXPECT_EQ(prediction_amp(AmpMode::Auto, false, false, cpu(false, false, false)), AmpMode::Off);  // AVX2 only
}

TEST(PredictionAmp, ExactNnunetAndCudaKeepTheirArithmetic) {
  EXPECT_EQ(prediction_amp(AmpMode::Auto, false, true, cpu(true, true, true)), AmpMode::Off);  // nnU-Net's fp32
  EXPECT_EQ(prediction_amp(AmpMode::Auto, true, false, cpu(true, true, true)), AmpMode::Fp16);
  EXPECT_EQ(prediction_amp(AmpMode::Auto, true, true, cpu(false, false, false)), AmpMode::Fp16);
}

TEST(PredictionAmp, AnExplicitChoiceIsKept) {
  for (const AmpMode m : {AmpMode::Off, AmpMode::Bf16, AmpMode::Fp16})
    for (const bool units : {false, true}) EXPECT_EQ(prediction_amp(m, false, false, cpu(units, units, units)), m);
  EXPECT_EQ(prediction_amp(AmpMode::Off, true, false, cpu(true, true, true)), AmpMode::Off);
}

// --tile_batch 0 (the default): 8 tiles x mirrored copies per pass on CUDA; on the CPU floor(2^20 / patch voxels)
// clamped to 1..8, computed by hand: the demo's 32x48x48 (73,728 voxels: 14 -> 8), 64^3 (262,144: 4), a 2D
// 512x512 (4), Hippocampus's 80x112x80 (716,800: 1) and a CT's 128^3 (1).
TEST(PredictionTileBatch, AutoBatchesSmallTilesOnTheCpuAndLargeOnesOneByOne) {
  using medseg::inference::auto_tile_batch;
  EXPECT_EQ(auto_tile_batch(true, {128, 128, 128}), 8);
  EXPECT_EQ(auto_tile_batch(false, {32, 48, 48}), 8);
  EXPECT_EQ(auto_tile_batch(false, {64, 64, 64}), 4);
  EXPECT_EQ(auto_tile_batch(false, {512, 512}), 4);
  EXPECT_EQ(auto_tile_batch(false, {80, 112, 80}), 1);
  EXPECT_EQ(auto_tile_batch(false, {128, 128, 128}), 1);
}
