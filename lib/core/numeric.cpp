#include "core/numeric.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace medseg {

double percentile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) throw std::invalid_argument("percentile of an empty set");
  if (q < 0 || q > 100) throw std::invalid_argument("percentile q outside [0, 100]");
  // numpy 'linear': virtual index (n-1)*q/100, interpolate between neighbours.
  const double idx = (static_cast<double>(s.size()) - 1.0) * (q / 100.0);  // numpy's grouping
  const auto lo = static_cast<std::size_t>(std::floor(idx));
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  const double frac = idx - static_cast<double>(lo);
  // numpy's _lerp: a + (b-a)*t, switched to b - (b-a)*(1-t) when t >= 0.5 for accuracy.
  const double a = s[lo], b = s[hi], d = b - a;
  return frac >= 0.5 ? b - d * (1.0 - frac) : a + d * frac;
}

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, q);
}

std::vector<double> percentiles(std::vector<double> values, const std::vector<double>& qs) {
  std::sort(values.begin(), values.end());
  std::vector<double> out;
  out.reserve(qs.size());
  for (double q : qs) out.push_back(percentile_sorted(values, q));
  return out;
}

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of an empty set");
  // numpy.median: the middle element, or the mean of the two middle elements.
  const std::size_t n = values.size(), mid = n / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2.0;
}

double round_half_even(double x) { return std::nearbyint(x); }  // default FE_TONEAREST is half-even

int64_t round_half_even_int(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

float numpy_sum_f32(const float* a, int64_t n) {
  if (n < 8) {
    float res = 0.0f;
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_sum_f32(a, n2) + numpy_sum_f32(a + n2, n - n2);
}

float round_to_half(double x) {
  if (std::isnan(x)) return static_cast<float>(x);
  const double a = std::fabs(x);
  if (a >= 65520.0) return std::copysign(std::numeric_limits<float>::infinity(), static_cast<float>(x));
  // The spacing of half values at a: 2^-24 below 2^-14 (subnormals), else 2^(E - 10) for a in
  // [2^E, 2^(E+1)). Scaling by a power of two is exact, so nearbyint rounds the double itself.
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): E = e - 1
  const int quantum_exp = a < std::ldexp(1.0, -14) ? -24 : e - 1 - 10;
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -quantum_exp)), quantum_exp);
  return static_cast<float>(std::copysign(r, x));
}

}  // namespace medseg
