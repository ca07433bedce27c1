#include "plans/primus_decoder.h"

#include <algorithm>
#include <cmath>

namespace medseg::planning {

PrimusDecoderStages primus_decoder_stages(const std::vector<int64_t>& patch_embed_size, int64_t embed_dim,
                                          int64_t num_classes) {
  int64_t largest = 1;
  for (int64_t p : patch_embed_size) largest = std::max(largest, p);
  const auto stages = static_cast<int64_t>(std::log(static_cast<double>(largest)) / std::log(2.0));
  PrimusDecoderStages d;
  for (int64_t n = stages - 1; n >= 0; --n) {
    std::vector<int64_t> s;
    for (int64_t p : patch_embed_size)
      s.push_back(std::fmod(static_cast<double>(p) / std::pow(2.0, static_cast<double>(n)), 2.0) == 0 ? 2 : 1);
    d.strides.push_back(s);
  }
  const double embed = static_cast<double>(embed_dim);
  const double reduction =
      std::pow(embed / (2.0 * static_cast<double>(num_classes)), 1.0 / static_cast<double>(stages));
  d.channels.push_back(embed_dim);
  for (int64_t x = 0; x < stages; ++x) {
    const double c = embed / std::pow(reduction, static_cast<double>(x + 1));
    d.channels.push_back(static_cast<int64_t>(std::max(8.0, std::nearbyint((c + 1e-6) / 8) * 8)));
  }
  d.channels.back() = num_classes;
  return d;
}

}  // namespace medseg::planning
