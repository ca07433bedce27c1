#include "data/augment/gaussian_blur.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/numeric.h"

namespace medseg::data::augment {

namespace {

// BG2's _round_to_nearest_odd (Python round, then step away from the even value towards n).
int64_t round_to_nearest_odd(double n) {
  const int64_t r = round_half_even_int(n);
  if (r % 2 != 0) return r;
  return n - static_cast<double>(r) >= 0 ? r + 1 : r - 1;
}

int64_t reflect(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// Along x (contiguous): each line copied once into a padded buffer, then a dot product per output.
void convolve_rows(float* x, int64_t lines, int64_t n, const std::vector<float>& k) {
  const int64_t half = static_cast<int64_t>(k.size()) / 2;
  const std::vector<int64_t> src = reflected_indices(n, half);
  std::vector<float> line(src.size());
  for (int64_t l = 0; l < lines; ++l) {
    float* row = x + l * n;
    for (size_t i = 0; i < src.size(); ++i) line[i] = row[src[i]];
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0.f;
      for (size_t t = 0; t < k.size(); ++t) acc += k[t] * line[static_cast<size_t>(i) + t];
      row[i] = acc;
    }
  }
}

// Along an outer axis (y within a z-plane, or z): `n` slices of `inner` contiguous values, `outer`
// times. Whole slices are combined, so the inner loop runs over contiguous memory and vectorises.
void convolve_slices(float* x, int64_t outer, int64_t n, int64_t inner, const std::vector<float>& k) {
  const int64_t half = static_cast<int64_t>(k.size()) / 2;
  const std::vector<int64_t> src = reflected_indices(n, half);
  std::vector<float> block(static_cast<size_t>(n * inner));
  for (int64_t o = 0; o < outer; ++o) {
    float* base = x + o * n * inner;
    std::copy(base, base + n * inner, block.begin());
    for (int64_t i = 0; i < n; ++i) {
      float* dst = base + i * inner;
      std::fill(dst, dst + inner, 0.f);
      for (size_t t = 0; t < k.size(); ++t) {
        const float* s = block.data() + src[static_cast<size_t>(i) + t] * inner;
        const float w = k[t];
        for (int64_t v = 0; v < inner; ++v) dst[v] += w * s[v];
      }
    }
  }
}

}  // namespace

std::vector<int64_t> reflected_indices(int64_t n, int64_t half) {
  std::vector<int64_t> r;
  for (int64_t i = -half; i < n + half; ++i) r.push_back(reflect(i, n));
  return r;
}

BlurParams sample_blur(const AugmentConfig& cfg, int64_t channels, Rng& rng) {
  BlurParams p;
  for (int64_t c = 0; c < channels; ++c)
    if (rng.bernoulli(cfg.blur_p_channel)) p.channels.push_back(c);
  for (size_t i = 0; i < p.channels.size(); ++i) {
    std::array<double, 3> s{};
    if (cfg.blur_sync_axes)
      s.fill(rng.uniform(cfg.blur_lo, cfg.blur_hi));
    else
      for (auto& v : s) v = rng.uniform(cfg.blur_lo, cfg.blur_hi);
    p.sigmas.push_back(s);
  }
  return p;
}

std::vector<float> gaussian_kernel(double sigma) {
  const int64_t size = round_to_nearest_odd(sigma * 6 + 0.5);
  const double half = (size - 1) * 0.5;
  std::vector<double> w(static_cast<size_t>(size));
  double sum = 0;
  for (int64_t i = 0; i < size; ++i) {
    const double x = -half + static_cast<double>(i);
    w[static_cast<size_t>(i)] = std::exp(-0.5 * (x / sigma) * (x / sigma));
    sum += w[static_cast<size_t>(i)];
  }
  std::vector<float> k;
  for (double v : w) k.push_back(static_cast<float>(v / sum));
  return k;
}

void blur_channel(at::Tensor& data, int64_t c, const std::array<double, 3>& sigma) {
  at::Tensor ch = data[c].contiguous();
  float* x = ch.data_ptr<float>();
  const int64_t Z = ch.size(0), Y = ch.size(1), X = ch.size(2);
  if (Z > 1) convolve_slices(x, 1, Z, Y * X, gaussian_kernel(sigma[0]));
  if (Y > 1) convolve_slices(x, Z, Y, X, gaussian_kernel(sigma[1]));
  if (X > 1) convolve_rows(x, Z * Y, X, gaussian_kernel(sigma[2]));
  if (ch.data_ptr() != data[c].data_ptr()) data[c].copy_(ch);
}

void apply_blur(at::Tensor& data, const BlurParams& p) {
  for (size_t i = 0; i < p.channels.size(); ++i) blur_channel(data, p.channels[i], p.sigmas[i]);
}

}  // namespace medseg::data::augment
