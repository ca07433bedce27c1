#include "data/augment/low_resolution.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <vector>

#include "core/error.h"
#include "core/numeric.h"
#include "data/augment/resize.h"

namespace medseg::data::augment {

namespace {

// Linear interpolation (align_corners=False) along one axis from `in` to `out` samples, with
// torch's source-index rule: src = max(0, (i + 0.5) * in / out - 0.5), neighbours floor(src) and
// the next one (clamped), weights from the fraction.
struct LinearAxis {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
  LinearAxis(int64_t in, int64_t out) {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    for (int64_t i = 0; i < out; ++i) {
      float src = scale * (static_cast<float>(i) + 0.5f) - 0.5f;
      if (src < 0) src = 0;
      const int64_t a = static_cast<int64_t>(src);
      const float l1 = src - static_cast<float>(a);
      i0.push_back(a);
      i1.push_back(a < in - 1 ? a + 1 : a);
      w0.push_back(1.f - l1);
      w1.push_back(l1);
    }
  }
};

// Nearest-exact down to `small`, then linear back to `full`, one axis at a time (both are
// separable): x within rows, then y and z on whole rows, which the compiler vectorises.
void down_up(float* x, const std::array<int64_t, 3>& full, const std::array<int64_t, 3>& small) {
  const auto nz = nearest_exact_indices(full[0], small[0]), ny = nearest_exact_indices(full[1], small[1]);
  const auto nx = nearest_exact_indices(full[2], small[2]);
  const LinearAxis lx(small[2], full[2]), ly(small[1], full[1]), lz(small[0], full[0]);
  const int64_t Z = full[0], Y = full[1], X = full[2], sz = small[0], sy = small[1];
  // Down in z and y, and x down and up at once: a (sz, sy, X) buffer.
  std::vector<float> a(static_cast<size_t>(sz * sy * X)), row(static_cast<size_t>(small[2]));
  for (int64_t k = 0; k < sz; ++k)
    for (int64_t j = 0; j < sy; ++j) {
      const float* src = x + (nz[static_cast<size_t>(k)] * Y + ny[static_cast<size_t>(j)]) * X;
      for (size_t i = 0; i < row.size(); ++i) row[i] = src[nx[i]];
      float* dst = a.data() + (k * sy + j) * X;
      for (int64_t i = 0; i < X; ++i) {
        const auto u = static_cast<size_t>(i);
        dst[i] = lx.w0[u] * row[static_cast<size_t>(lx.i0[u])] + lx.w1[u] * row[static_cast<size_t>(lx.i1[u])];
      }
    }
  // y up: (sz, Y, X).
  std::vector<float> b(static_cast<size_t>(sz * Y * X));
  for (int64_t k = 0; k < sz; ++k)
    for (int64_t j = 0; j < Y; ++j) {
      const auto u = static_cast<size_t>(j);
      const float *r0 = a.data() + (k * sy + ly.i0[u]) * X, *r1 = a.data() + (k * sy + ly.i1[u]) * X;
      float* dst = b.data() + (k * Y + j) * X;
      const float w0 = ly.w0[u], w1 = ly.w1[u];
      for (int64_t i = 0; i < X; ++i) dst[i] = w0 * r0[i] + w1 * r1[i];
    }
  // z up, into the channel.
  for (int64_t k = 0; k < Z; ++k) {
    const auto u = static_cast<size_t>(k);
    const float *p0 = b.data() + lz.i0[u] * Y * X, *p1 = b.data() + lz.i1[u] * Y * X;
    float* dst = x + k * Y * X;
    const float w0 = lz.w0[u], w1 = lz.w1[u];
    for (int64_t i = 0; i < Y * X; ++i) dst[i] = w0 * p0[i] + w1 * p1[i];
  }
}

}  // namespace

LowResParams sample_low_resolution(const AugmentConfig& cfg, int64_t channels, Rng& rng) {
  LowResParams p;
  for (int64_t c = 0; c < channels; ++c)
    if (rng.bernoulli(cfg.lowres_p_channel)) p.channels.push_back(c);
  for (size_t i = 0; i < p.channels.size(); ++i) {
    const double z = rng.uniform(cfg.lowres_lo, cfg.lowres_hi);
    p.zooms.push_back({cfg.lowres_ignores_z() ? 1.0 : z, z, z});
  }
  return p;
}

void apply_low_resolution(at::Tensor& data, const LowResParams& p) {
  MEDSEG_CHECK(data.is_contiguous() && data.scalar_type() == at::kFloat,
               "low resolution: expected a contiguous float32 (C, z, y, x) tensor");
  const std::array<int64_t, 3> full{data.size(1), data.size(2), data.size(3)};
  for (size_t i = 0; i < p.channels.size(); ++i) {
    std::array<int64_t, 3> small{};
    for (int d = 0; d < 3; ++d)
      small[d] = std::max<int64_t>(1, round_half_even_int(static_cast<double>(full[d]) * p.zooms[i][d]));
    down_up(data[p.channels[i]].data_ptr<float>(), full, small);
  }
}

}  // namespace medseg::data::augment
