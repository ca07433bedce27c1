#include "preprocessing/one_hot.h"

#include <algorithm>

namespace medseg::preprocessing {

void one_hot(const int16_t* seg, int64_t n, const std::vector<int>& labels, float* out) {
  for (size_t k = 0; k < labels.size(); ++k) {
    float* o = out + static_cast<int64_t>(k) * n;
    const int label = labels[k];
    for (int64_t v = 0; v < n; ++v) o[v] = seg[v] == label ? 1.f : 0.f;
  }
}

}  // namespace medseg::preprocessing
