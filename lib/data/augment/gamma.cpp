#include "data/augment/gamma.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "core/error.h"
#include "data/augment/stats.h"

namespace medseg::data::augment {

namespace {

// x -> sign * x, scaled to [0, 1] over its range: one pass where the torch version took four.
void to_unit(float* x, int64_t n, float sign, float lo, float inv_range) {
  for (int64_t i = 0; i < n; ++i) x[i] = (sign * x[i] - lo) * inv_range;
}

void affine(float* x, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * a + b;
}

}  // namespace

// With p = ((s x - lo) / r)^gamma (s = -1 when inverted), the result before retaining the statistics
// is p r + lo, whose mean and std are mean(p) r + lo and std(p) r. Retaining the statistics and
// undoing the sign is then one affine map of p: x = s ((p r + lo - mean') k + m) with
// k = std_before / max(std', 1e-7). pow itself stays torch's (vectorised) op.
void apply_gamma(at::Tensor& data, const std::vector<double>& gammas, bool invert, bool retain_stats) {
  MEDSEG_CHECK(data.is_contiguous() && data.scalar_type() == at::kFloat,
               "gamma: expected a contiguous float32 (C, z, y, x) tensor");
  const int64_t n = data[0].numel();
  float* base = data.data_ptr<float>();  // (C, ...) contiguous: the pipeline guarantees it
  const double sign = invert ? -1.0 : 1.0;
  for (size_t c = 0; c < gammas.size(); ++c) {
    float* x = base + static_cast<int64_t>(c) * n;
    const ChannelStats st = channel_stats(x, n, retain_stats);
    // Statistics of s x: min / max swap and the mean flips sign when inverted.
    const double lo = invert ? -st.max : st.min, range = st.max - st.min, mean = sign * st.mean;
    to_unit(x, n, static_cast<float>(sign), static_cast<float>(lo),
            static_cast<float>(1.0 / std::max(range, kGammaFlatEps)));
    data[static_cast<int64_t>(c)].pow_(gammas[c]);
    double a = range, b = lo;  // p -> p r + lo
    if (retain_stats) {
      const ChannelStats ps = channel_stats(x, n, true);
      const double mean_after = ps.mean * range + lo, std_after = ps.std * range;
      const double k = st.std / std::max(std_after, kGammaFlatEps);
      a = range * k;
      b = (lo - mean_after) * k + mean;
    }
    affine(x, n, static_cast<float>(sign * a), static_cast<float>(sign * b));
  }
}

}  // namespace medseg::data::augment
