#include "data/augment/deep_supervision.h"

#include <ATen/ATen.h>

#include "core/error.h"
#include "core/numeric.h"
#include "data/augment/resize.h"

namespace medseg::data::augment {

std::vector<Scale3> deep_supervision_scales(const std::vector<std::vector<int>>& strides) {
  std::vector<Scale3> out;
  std::array<double, 3> prod{1, 1, 1};
  for (size_t s = 0; s + 1 < strides.size(); ++s) {  // the last (lowest) resolution is not supervised
    const auto& st = strides[s];
    MEDSEG_CHECK(st.size() == 2 || st.size() == 3, "deep supervision: strides must have 2 or 3 entries");
    const size_t off = 3 - st.size();
    for (size_t d = 0; d < st.size(); ++d) prod[off + d] *= st[d];
    out.push_back({1.0 / prod[0], 1.0 / prod[1], 1.0 / prod[2]});
  }
  return out;
}

std::vector<at::Tensor> downsample_targets(const at::Tensor& seg, const std::vector<Scale3>& scales) {
  std::vector<at::Tensor> out;
  for (const auto& s : scales) {
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
      out.push_back(seg);
      continue;
    }
    std::vector<int64_t> size;
    for (int d = 0; d < 3; ++d) size.push_back(round_half_even_int(static_cast<double>(seg.size(2 + d)) * s[d]));
    out.push_back(resize_nearest_exact(seg, size));  // integer labels pass through unchanged
  }
  return out;
}

}  // namespace medseg::data::augment
