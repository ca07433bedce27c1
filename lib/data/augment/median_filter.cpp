#include "data/augment/median_filter.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace medseg::data::augment {

namespace {

// scipy 'reflect' (numpy 'symmetric'): source index of padded position i of a line of n.
int64_t symmetric(int64_t i, int64_t n) {
  const int64_t period = 2 * n;
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - 1 - i;
}

// `t` padded along `dim` by `before` and `after` positions.
at::Tensor pad_symmetric(const at::Tensor& t, int64_t dim, int64_t before, int64_t after) {
  if (before == 0 && after == 0) return t;
  const int64_t n = t.size(dim);
  std::vector<int64_t> idx;
  for (int64_t i = -before; i < n + after; ++i) idx.push_back(symmetric(i, n));
  return t.index_select(dim, at::tensor(idx, at::kLong).to(t.device()));
}

constexpr int64_t kSlabElements = int64_t{1} << 23;  // window elements gathered at once (32 MiB of float)

}  // namespace

MedianParams sample_median(const AugmentConfig& cfg, int64_t channels, Rng& rng) {
  std::vector<double> sizes;
  for (int64_t c = 0; c < channels; ++c)
    sizes.push_back(static_cast<double>(rng.randint(cfg.median_lo, cfg.median_hi)));
  return chosen_channel_values(sizes, cfg.median_p_channel, rng);
}

at::Tensor median_filter(const at::Tensor& volume, int64_t size) {
  at::Tensor padded = volume;
  int64_t win[3];
  for (int64_t d = 0; d < 3; ++d) {
    win[d] = volume.size(d) == 1 ? 1 : size;
    padded = pad_symmetric(padded, d, win[d] / 2, win[d] - 1 - win[d] / 2);
  }
  // (z, y, x, wz, wy, wx) windows, gathered a slab of z-slices at a time.
  const at::Tensor windows = padded.unfold(0, win[0], 1).unfold(1, win[1], 1).unfold(2, win[2], 1);
  const int64_t n = win[0] * win[1] * win[2], plane = volume.size(1) * volume.size(2);
  const int64_t slab = std::max<int64_t>(1, kSlabElements / std::max<int64_t>(1, plane * n));
  at::Tensor out = at::empty_like(volume);
  for (int64_t z = 0; z < volume.size(0); z += slab) {
    const int64_t len = std::min(slab, volume.size(0) - z);
    const at::Tensor rows = windows.narrow(0, z, len).reshape({-1, n});
    out.narrow(0, z, len).copy_(std::get<0>(rows.kthvalue(n / 2 + 1, 1)).view({len, volume.size(1), volume.size(2)}));
  }
  return out;
}

void apply_median(at::Tensor& data, const MedianParams& p) {
  for (size_t i = 0; i < p.channels.size(); ++i) {
    at::Tensor ch = data[p.channels[i]];
    ch.copy_(median_filter(ch, static_cast<int64_t>(p.values[i])));
  }
}

}  // namespace medseg::data::augment
