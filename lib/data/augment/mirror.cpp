#include "data/augment/mirror.h"

namespace medseg::data::augment {

std::vector<int64_t> sample_mirror_axes(const AugmentConfig& cfg, Rng& rng) {
  std::vector<int64_t> axes;
  for (int a : cfg.mirror_axes)
    if (rng.bernoulli(cfg.p_mirror)) axes.push_back(a);
  return axes;
}

}  // namespace medseg::data::augment
