#include "data/region_targets.h"

#include <ATen/ATen.h>

#include <string>

#include "core/error.h"

namespace medseg::data {

at::Tensor region_targets(const at::Tensor& labels, const std::vector<std::vector<int>>& regions, bool ignore_channel) {
  MEDSEG_CHECK(!regions.empty(), "region targets: no regions");
  MEDSEG_CHECK(labels.dim() >= 3 && labels.size(1) == 1, "region targets: labels of shape ", c10::str(labels.sizes()),
               " are not (B, 1, *spatial)");
  const at::Tensor l = labels.squeeze(1).to(at::kInt);
  std::vector<at::Tensor> channels;
  channels.reserve(regions.size() + 1);
  for (const auto& r : regions) {
    MEDSEG_CHECK(!r.empty(), "region targets: an empty region");
    at::Tensor in = l.eq(r.front());
    for (size_t k = 1; k < r.size(); ++k) in.logical_or_(l.eq(r[k]));
    channels.push_back(in);
  }
  if (ignore_channel) channels.push_back(l.eq(-1));
  return at::stack(channels, 1).to(at::kFloat);
}

}  // namespace medseg::data
