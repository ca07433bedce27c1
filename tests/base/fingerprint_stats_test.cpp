// Intensity statistics against values worked out by hand with numpy's rules (population std,
// linear percentiles: virtual index (n-1)*q/100), and the sampler's distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "fingerprint/intensity_stats.h"

using namespace medseg::fingerprint;

// numpy.percentile's rule on a fully sorted copy: virtual index (n-1)*(q/100) (numpy divides q by
// 100 first), then a + (b-a)*t, or b - (b-a)*(1-t) for t >= 0.5.
static double numpy_percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double idx = (static_cast<double>(v.size()) - 1.0) * (q / 100.0);
  const std::size_t lo = static_cast<std::size_t>(std::floor(idx)), hi = std::min(lo + 1, v.size() - 1);
  const double t = idx - static_cast<double>(lo), a = v[lo], b = v[hi];
  return t >= 0.5 ? b - (b - a) * (1.0 - t) : a + (b - a) * t;
}

TEST(FingerprintStats, OddCountByHand) {
  // sorted 1 3 4 7 10; mean 5; var (16+4+1+4+25)/5 = 10
  IntensityStats s = compute_intensity_stats({10, 1, 4, 7, 3});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.median, 4.0);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(10.0));
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_DOUBLE_EQ(s.percentile_00_5, 1.04);  // idx 0.02: 1 + 2*0.02
  EXPECT_DOUBLE_EQ(s.percentile_99_5, 9.94);  // idx 3.98: 7 + 3*0.98
}

TEST(FingerprintStats, EvenCountByHand) {
  // sorted 2 4 6 8; mean 5; var (9+1+1+9)/4 = 5
  IntensityStats s = compute_intensity_stats({8, 2, 6, 4});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.median, 5.0);  // idx 1.5
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(5.0));
  EXPECT_DOUBLE_EQ(s.percentile_00_5, 2.03);  // idx 0.015: 2 + 2*0.015
  EXPECT_DOUBLE_EQ(s.percentile_99_5, 7.97);  // idx 2.985: 6 + 2*0.985
}

TEST(FingerprintStats, ManyPercentilesMatchFullSort) {
  // 0..100 in scrambled order: the q-th percentile of 0..100 is q exactly.
  std::vector<float> v;
  for (int i = 0; i <= 100; ++i) v.push_back(static_cast<float>((i * 37) % 101));
  auto p = percentiles_of(v, {0, 0.5, 12.25, 50, 50, 99.5, 100});
  const double expect[] = {0, 0.5, 12.25, 50, 50, 99.5, 100};
  for (int k = 0; k < 7; ++k) EXPECT_NEAR(p[k], expect[k], 1e-12) << k;
  EXPECT_THROW(percentiles_of(v, {50, 10}), std::invalid_argument);
}

TEST(FingerprintStats, ConstantValues) {
  IntensityStats s = compute_intensity_stats(std::vector<float>(1000, 7.25f));
  EXPECT_DOUBLE_EQ(s.mean, 7.25);
  EXPECT_DOUBLE_EQ(s.median, 7.25);
  EXPECT_DOUBLE_EQ(s.min, 7.25);
  EXPECT_DOUBLE_EQ(s.max, 7.25);
  EXPECT_DOUBLE_EQ(s.percentile_00_5, 7.25);
  EXPECT_DOUBLE_EQ(s.percentile_99_5, 7.25);
  EXPECT_DOUBLE_EQ(s.std, 0.0);
}

TEST(FingerprintStats, EmptyIsNaN) {
  IntensityStats s = compute_intensity_stats({});
  EXPECT_TRUE(std::isnan(s.mean));
  EXPECT_TRUE(std::isnan(s.percentile_99_5));
}

TEST(FingerprintStats, SamplingConstantPool) {
  std::mt19937_64 rng(1234);
  auto s = sample_with_replacement(std::vector<float>(3, -4.5f), 500, rng);
  ASSERT_EQ(s.size(), 500u);
  IntensityStats st = compute_intensity_stats(s);
  EXPECT_DOUBLE_EQ(st.mean, -4.5);
  EXPECT_DOUBLE_EQ(st.median, -4.5);
  EXPECT_DOUBLE_EQ(st.min, -4.5);
  EXPECT_DOUBLE_EQ(st.max, -4.5);
  EXPECT_DOUBLE_EQ(st.std, 0.0);
}

TEST(FingerprintStats, SamplingIsUniformWithReplacement) {
  // 1e6 draws from {1,2,3,4}: more draws than values, so replacement is needed. Each value's
  // share is 0.25 (binomial sd 4.3e-4); mean 2.5 (sd 1.1e-3); population std sqrt(1.25).
  std::mt19937_64 rng(1234);
  auto s = sample_with_replacement({1, 2, 3, 4}, 1000000, rng);
  std::map<float, int> counts;
  for (float x : s) ++counts[x];
  ASSERT_EQ(counts.size(), 4u);
  for (auto& [v, c] : counts) EXPECT_NEAR(c / 1e6, 0.25, 0.003) << v;
  IntensityStats st = compute_intensity_stats(s);
  EXPECT_NEAR(st.mean, 2.5, 0.01);
  EXPECT_NEAR(st.std, std::sqrt(1.25), 0.01);
  EXPECT_DOUBLE_EQ(st.min, 1.0);
  EXPECT_DOUBLE_EQ(st.max, 4.0);
  EXPECT_DOUBLE_EQ(st.percentile_00_5, 1.0);
  EXPECT_DOUBLE_EQ(st.percentile_99_5, 4.0);
  EXPECT_GE(st.median, 2.0);
  EXPECT_LE(st.median, 3.0);
}

TEST(FingerprintStats, SamplingIsSeeded) {
  std::mt19937_64 a(1234), b(1234), c(99);
  std::vector<float> pool{1, 2, 3, 4, 5, 6, 7};
  auto sa = sample_with_replacement(pool, 50, a);
  EXPECT_EQ(sa, sample_with_replacement(pool, 50, b));
  EXPECT_NE(sa, sample_with_replacement(pool, 50, c));
  EXPECT_TRUE(sample_with_replacement({}, 50, a).empty());
}

TEST(FingerprintStats, UniformIndexCoversSmallAndHugeRanges) {
  std::mt19937_64 rng(7);
  std::vector<int> seen(3, 0);
  for (int i = 0; i < 3000; ++i) ++seen[uniform_index(rng, 3)];
  for (int c : seen) EXPECT_NEAR(c, 1000, 150);
  const uint64_t big = (uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 100; ++i) EXPECT_LT(uniform_index(rng, big), big);
  EXPECT_EQ(uniform_index(rng, 1), 0u);
}

TEST(FingerprintStats, SelectionAgreesWithFullSortOnRandomData) {
  // Reference: full sort + numpy's rule on the same values, with ties.
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> d(-50, 50);
  for (int n : {1, 2, 3, 10, 1001}) {
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng) * 0.25f;
    std::vector<double> ref(v.begin(), v.end());
    const std::vector<double> qs{0, 0.5, 25, 50, 50, 99.5, 100};
    const auto got = percentiles_of(v, qs);
    for (std::size_t k = 0; k < qs.size(); ++k)
      EXPECT_DOUBLE_EQ(got[k], numpy_percentile(ref, qs[k])) << n << " " << qs[k];
  }
}

TEST(FingerprintStats, PercentilesExactOverWideRangesAndSigns) {
  // Values spread over many binades and both signs (and near-equal neighbours that differ only in
  // the low mantissa bits), against a full sort.
  std::mt19937_64 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(-20, 20);
  std::vector<float> v;
  for (int i = 0; i < 5000; ++i) v.push_back(std::ldexp(g(rng), e(rng)));
  for (int i = 0; i < 50; ++i) v.push_back(std::nextafter(1.0f, 2.0f) + i * 1e-7f);
  v.push_back(-0.0f);
  v.push_back(0.0f);
  std::vector<double> ref(v.begin(), v.end());
  const std::vector<double> qs{0, 0.5, 1, 33.3, 50, 66.7, 99, 99.5, 100};
  const auto got = percentiles_of(v, qs);
  for (std::size_t k = 0; k < qs.size(); ++k) EXPECT_DOUBLE_EQ(got[k], numpy_percentile(ref, qs[k])) << qs[k];
}
