#include "data/augment/blank_rectangle.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "data/augment/intensity.h"

namespace medseg::data::augment {

std::vector<BlankRect> sample_blank_rectangles(const AugmentConfig& cfg, int64_t channels, Rng& rng) {
  const std::vector<int64_t> chosen = chosen_channels(channels, cfg.blank_p_channel, rng);
  std::vector<BlankRect> rects;
  for (int64_t c : chosen) {
    const int64_t n = rng.randint(cfg.blank_min_count, cfg.blank_max_count);
    for (int64_t r = 0; r < n; ++r) {
      BlankRect rect;
      rect.channel = c;
      for (int d = 0; d < 3; ++d) {
        const int64_t P = cfg.patch[d], lo = std::max<int64_t>(1, P / 10), hi = std::max(lo, P / 3 - 1);
        const int64_t size = rng.randint(lo, hi);  // lo <= hi <= P
        rect.box.lo[d] = rng.randint(0, P - size);
        rect.box.hi[d] = rect.box.lo[d] + size;
      }
      rects.push_back(rect);
    }
  }
  return rects;
}

void reflect_rectangles(std::vector<BlankRect>& rects, const std::vector<int64_t>& axes, const Shape3& patch) {
  for (BlankRect& r : rects)
    for (int64_t a : axes) {
      const int64_t lo = patch[a] - r.box.hi[a];
      r.box.hi[a] = patch[a] - r.box.lo[a];
      r.box.lo[a] = lo;
    }
}

void apply_blank_rectangles(at::Tensor& data, const std::vector<BlankRect>& rects) {
  for (const BlankRect& r : rects) {
    at::Tensor box = data[r.channel];
    for (int d = 0; d < 3; ++d) box = box.slice(d, r.box.lo[d], r.box.hi[d]);
    box.fill_(box.mean());
  }
}

}  // namespace medseg::data::augment
