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
