#ifndef MEDSEG_WITH_ITK
#include "core/error.h"
#include "evaluation/distance_map.h"

namespace medseg::evaluation {
std::vector<float> distance_to_mask(const std::vector<uint8_t>&, const std::array<int64_t, 3>&,
                                    const std::array<double, 3>&) {
  throw Error("distance maps need ITK (this build has -DMEDSEG_WITH_ITK=OFF)");
}
}  // namespace medseg::evaluation
#endif
