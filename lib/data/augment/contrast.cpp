#include "data/augment/contrast.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "core/error.h"
#include "data/augment/stats.h"

namespace medseg::data::augment {

void apply_contrast(at::Tensor& data, const std::vector<int64_t>& channels, const std::vector<double>& factors,
                    bool preserve_range) {
  MEDSEG_CHECK(data.is_contiguous() && data.scalar_type() == at::kFloat,
               "contrast: expected a contiguous float32 (C, z, y, x) tensor");
  const int64_t n = data[0].numel();
  float* base = data.data_ptr<float>();  // (C, ...) contiguous: the pipeline guarantees it
  MEDSEG_CHECK(channels.size() == factors.size(), "contrast: one factor per channel expected");
  for (size_t c = 0; c < factors.size(); ++c) {
    float* x = base + channels[c] * n;
    const ChannelStats st = channel_stats(x, n, false);
    // (x - mean) * f + mean = x * f + mean * (1 - f), in float like the torch ops it replaces.
    const float f = static_cast<float>(factors[c]), m = static_cast<float>(st.mean);
    const float lo = preserve_range ? static_cast<float>(st.min) : -INFINITY;
    const float hi = preserve_range ? static_cast<float>(st.max) : INFINITY;
    for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max((x[i] - m) * f + m, lo), hi);
  }
}

}  // namespace medseg::data::augment
