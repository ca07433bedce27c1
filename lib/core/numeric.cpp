#include "core/numeric.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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

// On the double's bits, not through frexp/ldexp/nearbyint: the export rounds every resampled logit this way
// (classes x voxels of the original image), and the library calls took about a tenth of a bf16 prediction.
float round_to_half(double x) {
  if (std::isnan(x)) return static_cast<float>(x);
  const double a = std::fabs(x);
  if (a >= 65520.0) return std::copysign(std::numeric_limits<float>::infinity(), static_cast<float>(x));
  if (a < 0x1p-25) return std::copysign(0.0f, static_cast<float>(x));  // under half the least quantum
  uint64_t bits = 0;
  std::memcpy(&bits, &a, sizeof bits);
  // a = m * 2^(e - 52) with m the 53-bit significand (a is a normal double here: a >= 2^-25).
  const int e = static_cast<int>(bits >> 52) - 1023;
  const uint64_t m = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  // The spacing of half values at a is 2^q: 2^-24 below 2^-14 (subnormals), else 2^(e - 10). Dropping
  // q - (e - 52) low bits of m (42 to 53 here) leaves the multiple of 2^q, rounded half to even.
  const int q = e < -14 ? -24 : e - 10;
  const int drop = q - e + 52;
  // Branch-free half to even: adding half a quantum less one, plus the kept part's last bit, carries into the
  // kept bits exactly when the dropped part exceeds half, or equals it and the kept part is odd.
  const uint64_t half = uint64_t{1} << (drop - 1);
  const uint64_t rounded = (m + (half - 1) + ((m >> drop) & 1)) >> drop;
  // rounded * 2^q: at most 12 significant bits, exact in a float; the power of two is built from its bits.
  const uint64_t scale_bits = static_cast<uint64_t>(q + 1023) << 52;
  double scale = 0.0;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return static_cast<float>(std::copysign(static_cast<double>(rounded) * scale, x));
}

}  // namespace medseg
