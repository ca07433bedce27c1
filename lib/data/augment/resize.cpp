#include "data/augment/resize.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace medseg::data::augment {

std::vector<int64_t> nearest_exact_indices(int64_t in, int64_t n) {
  const float scale = static_cast<float>(in) / static_cast<float>(n);  // torch computes it in float
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    idx[static_cast<size_t>(i)] =
        std::min(static_cast<int64_t>(std::floor((static_cast<float>(i) + 0.5f) * scale)), in - 1);
  return idx;
}

at::Tensor resize_nearest_exact(const at::Tensor& t, const std::vector<int64_t>& size) {
  at::Tensor out = t;
  const int64_t first = t.dim() - static_cast<int64_t>(size.size());
  for (size_t a = 0; a < size.size(); ++a) {
    const int64_t dim = first + static_cast<int64_t>(a), in = t.size(dim), n = size[a];
    if (in == n) continue;
    const at::Tensor idx = at::tensor(nearest_exact_indices(in, n), at::kLong);
    // The index is built on the host; the gather runs where `t` lives (the device augmentation path).
    out = out.index_select(dim, t.is_cpu() ? idx : idx.to(t.device()));
  }
  return out;
}

}  // namespace medseg::data::augment
