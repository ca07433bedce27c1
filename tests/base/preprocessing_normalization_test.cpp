// Normalization and transpose against values worked out by hand.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "preprocessing/normalization.h"
#include "preprocessing/transpose.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::preprocessing;

TEST(PreprocessingNormalization, ZScoreOfOneToFour) {
  // mean 2.5, population std sqrt(1.25)
  std::vector<float> x{1, 2, 3, 4};
  normalize_channel(x.data(), 4, NormScheme::ZScore, false, nullptr, nullptr);
  const double expected[4] = {-1.3416407865, -0.4472135955, 0.4472135955, 1.3416407865};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x[i], expected[i], 1e-6);
}

TEST(PreprocessingNormalization, ZScoreIgnoresTheMaskUnlessAsked) {
  std::vector<float> x{1, 2, 3, 4};
  const std::vector<int16_t> seg{-1, -1, 0, 0};
  normalize_channel(x.data(), 4, NormScheme::ZScore, false, seg.data(), nullptr);
  EXPECT_NEAR(x[0], -1.3416407865, 1e-6);
}

TEST(PreprocessingNormalization, MaskedZScoreLeavesOutsideVoxelsAlone) {
  // Inside (seg >= 0): {1, 3, 5}: mean 3, std sqrt(8/3). Outside voxels are 0 after cropping and stay 0.
  std::vector<float> x{0, 0, 1, 3, 5};
  const std::vector<int16_t> seg{-1, -1, 0, 1, 0};
  normalize_channel(x.data(), 5, NormScheme::ZScore, true, seg.data(), nullptr);
  const double s = std::sqrt(8.0 / 3.0);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_NEAR(x[2], -2 / s, 1e-6);
  EXPECT_NEAR(x[3], 0.0, 1e-6);
  EXPECT_NEAR(x[4], 2 / s, 1e-6);
}

TEST(PreprocessingNormalization, ConstantImageDividesBy1e8) {
  std::vector<float> x{5, 5, 5};
  normalize_channel(x.data(), 3, NormScheme::ZScore, false, nullptr, nullptr);
  for (float v : x) EXPECT_EQ(v, 0.0f);
}

TEST(PreprocessingNormalization, CTClipsThenUsesDatasetStatistics) {
  // clip to [-1000, 1000], then (x - 100) / 200
  std::vector<float> x{-2000, 0, 50, 3000};
  const IntensityProps p{100, 200, -1000, 1000};
  normalize_channel(x.data(), 4, NormScheme::CT, false, nullptr, &p);
  EXPECT_NEAR(x[0], -5.5, 1e-6);
  EXPECT_NEAR(x[1], -0.5, 1e-6);
  EXPECT_NEAR(x[2], -0.25, 1e-6);
  EXPECT_NEAR(x[3], 4.5, 1e-6);
  EXPECT_THROW(normalize_channel(x.data(), 4, NormScheme::CT, false, nullptr, nullptr), Error);
}

TEST(PreprocessingNormalization, RescaleRgbAndNone) {
  std::vector<float> a{2, 4, 6};
  normalize_channel(a.data(), 3, NormScheme::RescaleTo01, false, nullptr, nullptr);
  EXPECT_FLOAT_EQ(a[0], 0.0f);
  EXPECT_FLOAT_EQ(a[1], 0.5f);
  EXPECT_FLOAT_EQ(a[2], 1.0f);
  std::vector<float> b{0, 51, 255};
  normalize_channel(b.data(), 3, NormScheme::RGBTo01, false, nullptr, nullptr);
  EXPECT_FLOAT_EQ(b[1], 0.2f);
  EXPECT_FLOAT_EQ(b[2], 1.0f);
  std::vector<float> bad{0, 256};
  EXPECT_THROW(normalize_channel(bad.data(), 2, NormScheme::RGBTo01, false, nullptr, nullptr), Error);
  std::vector<float> c{-3, 7};
  normalize_channel(c.data(), 2, NormScheme::None, false, nullptr, nullptr);
  EXPECT_EQ(c, (std::vector<float>{-3, 7}));
}

TEST(PreprocessingNormalization, SchemeNamesAndProperties) {
  EXPECT_EQ(parse_norm_scheme("CTNormalization"), NormScheme::CT);
  EXPECT_EQ(parse_norm_scheme("RGBTo0_1Normalization"), NormScheme::RGBTo01);  // medseg's old spelling
  EXPECT_EQ(parse_norm_scheme("RGBTo01Normalization"), NormScheme::RGBTo01);
  EXPECT_STREQ(norm_scheme_name(NormScheme::ZScore), "ZScoreNormalization");
  // nnU-Net's class names (default_normalization_schemes.py), written back as nnU-Net spells them
  EXPECT_STREQ(norm_scheme_name(NormScheme::RGBTo01), "RGBTo01Normalization");
  EXPECT_STREQ(norm_scheme_name(NormScheme::RescaleTo01), "RescaleTo01Normalization");
  EXPECT_STREQ(norm_scheme_name(NormScheme::None), "NoNormalization");
  EXPECT_STREQ(norm_scheme_name(NormScheme::CT), "CTNormalization");
  EXPECT_THROW(parse_norm_scheme("MyNormalization"), Error);
  const json per_channel = json::parse(
      R"({"0": {"mean": 1.5, "std": 2.0, "percentile_00_5": -3.0, "percentile_99_5": 9.0, "median": 1.0}})");
  const IntensityProps p = intensity_props_from_json(per_channel, 0, "plans.json");
  EXPECT_EQ(p.mean, 1.5);
  EXPECT_EQ(p.std, 2.0);
  EXPECT_EQ(p.percentile_00_5, -3.0);
  EXPECT_EQ(p.percentile_99_5, 9.0);
  try {
    intensity_props_from_json(per_channel, 1, "plans.json");
    FAIL();
  } catch (const FileError& e) { EXPECT_NE(std::string(e.what()).find("plans.json"), std::string::npos); }
}

TEST(PreprocessingTranspose, PermutesAxesLikeNumpy) {
  const Shape3 in{2, 3, 4};
  std::vector<int> v(24);
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 4; ++x) v[(z * 3 + y) * 4 + x] = 100 * z + 10 * y + x;
  const Perm3 p = to_perm3({2, 0, 1}, "plans");
  EXPECT_EQ(permute3(in, p), (Shape3{4, 2, 3}));
  const auto t = transpose_vector(v, in, p);
  // numpy: t[i, j, k] = v[j, k, i]
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(t[(i * 2 + j) * 3 + k], 100 * j + 10 * k + i);
  EXPECT_EQ(inverse_perm(p), (Perm3{1, 2, 0}));
  EXPECT_EQ(transpose_vector(t, permute3(in, p), inverse_perm(p)), v);
  const std::array<double, 3> spacing{3.0, 0.5, 0.7};
  EXPECT_EQ(permute3(spacing, p), (std::array<double, 3>{0.7, 3.0, 0.5}));
  EXPECT_THROW(to_perm3({0, 0, 1}, "plans"), Error);
  EXPECT_THROW(to_perm3({0, 1}, "plans"), Error);
}

namespace {
// The crop [1, 1 + box) of an array of `full` filled with test::numpy_test_value in C order,
// copied out contiguously (what medseg's preprocessing holds).
std::vector<float> cropped_values(const std::array<int64_t, 3>& full, const std::array<int64_t, 3>& box) {
  std::vector<float> out;
  for (int64_t z = 1; z < 1 + box[0]; ++z)
    for (int64_t y = 1; y < 1 + box[1]; ++y)
      for (int64_t x = 1; x < 1 + box[2]; ++x) {
        out.push_back(test::numpy_test_value((z * full[1] + y) * full[2] + x));
      }
  return out;
}
}  // namespace

// nnU-Net z-scores the cropped numpy view of the image; numpy 2.4 sums a view in buffered chunks, so its
// float32 mean differs from the contiguous copy's in the last bit. Expected values: numpy's own, printed as
// bits ((v - v.mean()) / max(v.std(), 1e-8) of A[1:17, 1:25, 1:25] and B[1:4, 1:101, 1:101]).
TEST(PreprocessingNormalization, ZScoreOfACroppedViewIsNumpysBitForBit) {
  {
    std::vector<float> x = cropped_values({18, 26, 26}, {16, 24, 24});
    const ChannelLayout layout{{16, 24, 24}, {18, 26, 26}, {0, 1, 2}};
    normalize_channel(x.data(), static_cast<int64_t>(x.size()), NormScheme::ZScore, false, nullptr, nullptr, &layout);
    EXPECT_EQ(x[0], test::float_from_bits(0xbf22a14eu));  // whole planes (576 voxels) per buffer
  }
  {
    std::vector<float> x = cropped_values({5, 102, 102}, {3, 100, 100});
    const ChannelLayout layout{{3, 100, 100}, {5, 102, 102}, {0, 1, 2}};
    normalize_channel(x.data(), static_cast<int64_t>(x.size()), NormScheme::ZScore, false, nullptr, nullptr, &layout);
    EXPECT_EQ(x[5], test::float_from_bits(0x3ee63963u));  // a plane is over 8192 voxels: rows per buffer, per plane
  }
  // The same data as one contiguous array has another float32 mean (numpy: 0x3d3a268e, not 0x3d3a262e), so
  // the layout matters: without it the voxels near the mean come out differently.
  std::vector<float> view = cropped_values({18, 26, 26}, {16, 24, 24}), contiguous = view;
  const ChannelLayout layout{{16, 24, 24}, {18, 26, 26}, {0, 1, 2}};
  const auto n = static_cast<int64_t>(view.size());
  normalize_channel(view.data(), n, NormScheme::ZScore, false, nullptr, nullptr, &layout);
  normalize_channel(contiguous.data(), n, NormScheme::ZScore, false, nullptr, nullptr);
  EXPECT_NE(view, contiguous);
}
