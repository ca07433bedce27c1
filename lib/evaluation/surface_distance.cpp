#include "evaluation/surface_distance.h"

#include <algorithm>

#include "core/numeric.h"
#include "evaluation/distance_map.h"

namespace medseg::evaluation {

namespace {

// Whether voxel (z, y, x) lies in the mask; outside the volume counts as background.
bool in_mask(const std::vector<uint8_t>& m, const std::array<int64_t, 3>& s, int64_t z, int64_t y, int64_t x) {
  if (z < 0 || y < 0 || x < 0 || z >= s[0] || y >= s[1] || x >= s[2]) return false;
  return m[static_cast<size_t>((z * s[1] + y) * s[2] + x)] != 0;
}

}  // namespace

std::vector<uint8_t> surface_voxels(const std::vector<uint8_t>& m, const std::array<int64_t, 3>& s) {
  std::vector<uint8_t> out(m.size(), 0);
  auto at = [&](int64_t z, int64_t y, int64_t x) { return in_mask(m, s, z, y, x); };
  int64_t i = 0;
  for (int64_t z = 0; z < s[0]; ++z)
    for (int64_t y = 0; y < s[1]; ++y)
      for (int64_t x = 0; x < s[2]; ++x, ++i) {
        if (!m[static_cast<size_t>(i)]) continue;
        out[static_cast<size_t>(i)] = !(at(z - 1, y, x) && at(z + 1, y, x) && at(z, y - 1, x) && at(z, y + 1, x) &&
                                        at(z, y, x - 1) && at(z, y, x + 1));
      }
  return out;
}

static std::vector<double> directed(const std::vector<uint8_t>& from_surface, const std::vector<float>& dist_to_other) {
  std::vector<double> d;
  for (size_t i = 0; i < from_surface.size(); ++i)
    if (from_surface[i]) d.push_back(dist_to_other[i]);
  return d;
}

double hd95(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const std::array<int64_t, 3>& shape,
            const std::array<double, 3>& spacing) {
  const auto sa = surface_voxels(a, shape), sb = surface_voxels(b, shape);
  const auto da = distance_to_mask(sa, shape, spacing), db = distance_to_mask(sb, shape, spacing);
  return std::max(percentile(directed(sa, db), 95.0), percentile(directed(sb, da), 95.0));
}

}  // namespace medseg::evaluation
