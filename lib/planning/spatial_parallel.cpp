#include "planning/spatial_parallel.h"

#include "core/error.h"

namespace medseg::planning {

std::vector<int> total_strides(const std::vector<std::vector<int>>& strides, int dims) {
  std::vector<int> total(static_cast<std::size_t>(dims), 1);
  for (const auto& s : strides)
    for (int d = 0; d < dims && d < static_cast<int>(s.size()); ++d)
      total[static_cast<std::size_t>(d)] *= s[static_cast<std::size_t>(d)];
  return total;
}

int spatial_shard_axis(const std::vector<int>& patch, const std::vector<std::vector<int>>& strides, int n) {
  MEDSEG_CHECK(n >= 1, "spatial parallelism: the number of slabs must be >= 1");
  if (n == 1) return -1;
  const std::vector<int> total = total_strides(strides, static_cast<int>(patch.size()));
  int best = -1;
  for (int d = 0; d < static_cast<int>(patch.size()); ++d) {
    const int p = patch[static_cast<std::size_t>(d)];
    if (p % n != 0 || (p / n) % total[static_cast<std::size_t>(d)] != 0) continue;
    if (best < 0 || p > patch[static_cast<std::size_t>(best)]) best = d;
  }
  return best;
}

std::vector<int> slab_patch(std::vector<int> patch, int axis, int n) {
  MEDSEG_CHECK(axis >= 0 && axis < static_cast<int>(patch.size()) && patch[static_cast<std::size_t>(axis)] % n == 0,
               "spatial parallelism: the patch cannot be split into ", n, " slabs along axis ", axis);
  patch[static_cast<std::size_t>(axis)] /= n;
  return patch;
}

}  // namespace medseg::planning
