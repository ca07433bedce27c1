#include "data/augment/stats.h"

#include <algorithm>
#include <cmath>

namespace medseg::data::augment {

namespace {

// Four independent accumulators: the additions no longer wait on each other (a single running sum
// is bound by the add latency), and the order stays fixed.
template <class F>
double sum4(const float* x, int64_t n, F f) {
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += f(x[i + k]);
  for (; i < n; ++i) s[0] += f(x[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

}  // namespace

ChannelStats channel_stats(const float* x, int64_t n, bool with_std) {
  ChannelStats s;
  if (n == 0) return s;
  float lo = x[0], hi = x[0];
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  s.min = lo;
  s.max = hi;
  s.mean = sum4(x, n, [](float v) { return static_cast<double>(v); }) / static_cast<double>(n);
  if (with_std && n > 1) {
    const double m = s.mean;
    const double ss = sum4(x, n, [m](float v) { return (v - m) * (v - m); });
    s.std = std::sqrt(ss / static_cast<double>(n - 1));
  }
  return s;
}

}  // namespace medseg::data::augment
