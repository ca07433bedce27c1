#include "data/augment/stats.h"

#include <cmath>

#include "core/cpu_features.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MEDSEG_STATS_AVX512 1
#include <immintrin.h>
#endif

namespace medseg::data::augment {

namespace {

// Sixteen partial sums: lane k holds x[k], x[k + 16], ... in order; the lanes then combine pairwise
// (k + 8 into k, then k + 4, ...). The AVX-512 path keeps the lanes in two registers, the portable one in
// an array; both add the same numbers in the same order, so their results are the same bits.
constexpr int kLanes = 16;

struct StatsPartial {
  float lo[kLanes], hi[kLanes];
  double sum[kLanes];
};

double combine_lanes(double* s) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) s[k] += s[k + w];
  return s[0];
}

// Elements from `i` on, each into lane i % 16 (n - i < 16 when called after a wide pass).
void stats_first_tail(const float* x, int64_t i, int64_t n, StatsPartial& p) {
  for (; i < n; ++i) {
    const auto k = static_cast<size_t>(i % kLanes);
    p.lo[k] = x[i] < p.lo[k] ? x[i] : p.lo[k];
    p.hi[k] = x[i] > p.hi[k] ? x[i] : p.hi[k];
    p.sum[k] += static_cast<double>(x[i]);
  }
}

void stats_second_tail(const float* x, int64_t i, int64_t n, double m, double* q) {
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - m;
    q[i % kLanes] += d * d;
  }
}

#ifdef MEDSEG_STATS_AVX512
#define MEDSEG_STATS_TARGET __attribute__((target("avx512f,avx512dq")))

MEDSEG_STATS_TARGET int64_t stats_first_avx512(const float* x, int64_t n, StatsPartial& p) {
  __m512 lo = _mm512_loadu_ps(p.lo), hi = _mm512_loadu_ps(p.hi);
  __m512d s0 = _mm512_loadu_pd(p.sum), s1 = _mm512_loadu_pd(p.sum + 8);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 v = _mm512_loadu_ps(x + i);
    lo = _mm512_min_ps(v, lo);  // v < lo ? v : lo, the portable comparison
    hi = _mm512_max_ps(v, hi);
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
  }
  _mm512_storeu_ps(p.lo, lo);
  _mm512_storeu_ps(p.hi, hi);
  _mm512_storeu_pd(p.sum, s0);
  _mm512_storeu_pd(p.sum + 8, s1);
  return i;
}

MEDSEG_STATS_TARGET int64_t stats_second_avx512(const float* x, int64_t n, double m, double* q) {
  __m512d q0 = _mm512_loadu_pd(q), q1 = _mm512_loadu_pd(q + 8);
  const __m512d mean = _mm512_set1_pd(m);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), mean);
    const __m512d d1 =
        _mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), mean);
    q0 = _mm512_add_pd(q0, _mm512_mul_pd(d0, d0));
    q1 = _mm512_add_pd(q1, _mm512_mul_pd(d1, d1));
  }
  _mm512_storeu_pd(q, q0);
  _mm512_storeu_pd(q + 8, q1);
  return i;
}
#endif

// The wide passes: AVX-512 where the processor has it, else the same lanes in plain loops.
int64_t stats_first_pass(const float* x, int64_t n, StatsPartial& p) {
#ifdef MEDSEG_STATS_AVX512
  if (cpu_features().avx512_core) return stats_first_avx512(x, n, p);
#endif
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const float v = x[i + k];
      p.lo[k] = v < p.lo[k] ? v : p.lo[k];
      p.hi[k] = v > p.hi[k] ? v : p.hi[k];
      p.sum[k] += static_cast<double>(v);
    }
  return i;
}

int64_t stats_second_pass(const float* x, int64_t n, double m, double* q) {
#ifdef MEDSEG_STATS_AVX512
  if (cpu_features().avx512_core) return stats_second_avx512(x, n, m, q);
#endif
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const double d = static_cast<double>(x[i + k]) - m;
      q[k] += d * d;
    }
  return i;
}

}  // namespace

ChannelStats channel_stats(const float* x, int64_t n, bool with_std) {
  ChannelStats s;
  if (n == 0) return s;
  StatsPartial p{};
  for (int k = 0; k < kLanes; ++k) p.lo[k] = p.hi[k] = x[0];
  stats_first_tail(x, stats_first_pass(x, n, p), n, p);
  float lo = p.lo[0], hi = p.hi[0];
  for (int k = 1; k < kLanes; ++k) {
    lo = p.lo[k] < lo ? p.lo[k] : lo;
    hi = p.hi[k] > hi ? p.hi[k] : hi;
  }
  s.min = lo;
  s.max = hi;
  s.mean = combine_lanes(p.sum) / static_cast<double>(n);
  if (with_std && n > 1) {
    double q[kLanes] = {};
    stats_second_tail(x, stats_second_pass(x, n, s.mean, q), n, s.mean, q);
    s.std = std::sqrt(combine_lanes(q) / static_cast<double>(n - 1));
  }
  return s;
}

}  // namespace medseg::data::augment
