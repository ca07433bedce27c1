#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "core/numeric.h"
#include "support/test_support.h"

using namespace medseg;

// Reference values computed by hand with numpy's linear rule: idx = (n-1) q / 100.
TEST(Numeric, PercentileLinearInterpolation) {
  std::vector<double> v{10, 1, 4, 7};  // sorted: 1 4 7 10
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 10.0);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 5.5);      // idx 1.5
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 1.045);   // idx 0.015 -> 1 + 3*0.015
  EXPECT_DOUBLE_EQ(percentile(v, 99.5), 9.955);  // idx 2.985 -> 7 + 3*0.985
}

TEST(Numeric, MedianEvenAndOdd) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
}

TEST(Numeric, RoundHalfToEvenLikePython) {
  EXPECT_EQ(round_half_even_int(0.5), 0);
  EXPECT_EQ(round_half_even_int(1.5), 2);
  EXPECT_EQ(round_half_even_int(2.5), 2);
  EXPECT_EQ(round_half_even_int(-0.5), 0);
  EXPECT_EQ(round_half_even_int(2.6), 3);
}

// numpy.float16(x) for float64 x, by hand: halves have 10 fraction bits, so in [1, 2) the spacing is
// 2^-10; below 2^-14 they are subnormal with spacing 2^-24; 65504 is the largest, 65520 rounds to inf.
TEST(Numeric, RoundToHalfIsNumpysFloat64ToFloat16Cast) {
  EXPECT_EQ(round_to_half(1.0), 1.0f);
  EXPECT_EQ(round_to_half(1.0 + std::ldexp(1.0, -11)), 1.0f);  // a tie: to the even neighbour 1
  EXPECT_EQ(round_to_half(1.0 + 3 * std::ldexp(1.0, -11)), 1.0f + std::ldexp(1.0f, -9));  // tie: to even 1+2^-9
  // One rounding from the double: just above the tie goes up. Through float (1 + 2^-11 exactly) it
  // would be a tie and go down: numpy rounds once.
  EXPECT_EQ(round_to_half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(round_to_half(-3.14159265), -3.140625f);      // 3 + 36/256 (spacing 2^-9 in [2, 4))
  EXPECT_EQ(round_to_half(1e-7), std::ldexp(2.0f, -24));  // 1e-7 / 2^-24 = 1.68: 2 quanta
  EXPECT_EQ(round_to_half(2.9e-8), 0.0f);                 // below half a quantum
  EXPECT_EQ(round_to_half(65504.0), 65504.0f);
  EXPECT_EQ(round_to_half(65519.9), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to_half(65520.0)));
  EXPECT_TRUE(std::isnan(round_to_half(std::nan(""))));
  EXPECT_EQ(round_to_half(std::ldexp(1.0, -14) * 1.5), std::ldexp(1.0f, -14) * 1.5f);  // smallest normals exact
}

// The same cast by the compiler's own IEEE binary16 conversion (GCC's _Float16: libgcc rounds the double once, ties
// to even), over doubles whose exponents span the whole half range and beyond, random fraction bits, and the ties
// and neighbours of every quantum size.
TEST(Numeric, RoundToHalfEqualsTheCompilersFloat16Conversion) {
#if defined(__FLT16_MANT_DIG__)
  std::mt19937_64 rng(3);
  std::vector<double> xs;
  for (int e = -30; e <= 16; ++e) {
    for (int i = 0; i < 4000; ++i) {
      const uint64_t bits = (static_cast<uint64_t>(e + 1023) << 52) | (rng() & ((uint64_t{1} << 52) - 1));
      double d = 0.0;
      std::memcpy(&d, &bits, sizeof d);
      xs.push_back(i % 2 != 0 ? -d : d);
    }
    const int q = e < -14 ? -24 : e - 10;  // the quantum where e is the exponent
    for (int k = 1; k < 8; ++k) {
      const double tie = std::ldexp(1.0, e) + (2 * k - 1) * std::ldexp(1.0, q - 1);
      xs.insert(xs.end(), {tie, std::nextafter(tie, 0.0), std::nextafter(tie, 1e9), -tie});
    }
  }
  xs.insert(xs.end(), {0.0, -0.0, 65504.0, 65519.999, 65520.0, 1e300, 5e-324, std::ldexp(1.0, -25)});
  for (double x : xs) {
    const float want = static_cast<float>(static_cast<_Float16>(x));
    ASSERT_EQ(std::signbit(round_to_half(x)), std::signbit(want)) << x;
    ASSERT_EQ(round_to_half(x), want) << std::hexfloat << x;
  }
#else
  GTEST_SKIP() << "this compiler has no _Float16";
#endif
}

// np.add.reduce of test::numpy_test_value(0 .. n-1) in numpy 2.4 (bits printed by numpy): one block, pairwise halves.
TEST(Numeric, NumpySumF32IsNumpysPairwiseFloat32Sum) {
  const std::vector<std::pair<int64_t, uint32_t>> cases{
      {5, 0xc50753d7u}, {100, 0x44373e09u}, {300, 0xc2b48fa0u}, {20000, 0x46b00f24u}};
  for (const auto& [n, bits] : cases) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = test::numpy_test_value(i);
    EXPECT_EQ(numpy_sum_f32(v.data(), n), test::float_from_bits(bits)) << n;
  }
}
