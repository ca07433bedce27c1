#include "postprocessing/components.h"

#include <algorithm>
#include <stdexcept>

namespace medseg::postprocessing {

namespace {

// Labels the 26-connected component of `start` with `id` and returns its size. Flood fill with an explicit
// stack (`stack`, empty on entry and exit, kept by the caller for its capacity): a recursive fill overflows on
// large organs.
int64_t flood_fill(const std::vector<uint8_t>& mask, const std::array<int64_t, 3>& shape, std::vector<int32_t>& label,
                   int64_t start, int32_t id, std::vector<int64_t>& stack) {
  const int64_t nz = shape[0], ny = shape[1], nx = shape[2];
  int64_t size = 0;
  label[start] = id;
  stack.push_back(start);
  while (!stack.empty()) {
    const int64_t i = stack.back();
    stack.pop_back();
    ++size;
    const int64_t z = i / (ny * nx), y = (i / nx) % ny, x = i % nx;
    for (int64_t dz = -1; dz <= 1; ++dz) {
      const int64_t zz = z + dz;
      if (zz < 0 || zz >= nz) continue;
      for (int64_t dy = -1; dy <= 1; ++dy) {
        const int64_t yy = y + dy;
        if (yy < 0 || yy >= ny) continue;
        for (int64_t dx = -1; dx <= 1; ++dx) {
          const int64_t xx = x + dx;
          if (xx < 0 || xx >= nx) continue;
          const int64_t j = (zz * ny + yy) * nx + xx;
          if (mask[j] && !label[j]) {
            label[j] = id;
            stack.push_back(j);
          }
        }
      }
    }
  }
  return size;
}

}  // namespace

Components connected_components(const std::vector<uint8_t>& mask, const std::array<int64_t, 3>& shape) {
  const int64_t nz = shape[0], ny = shape[1], nx = shape[2];
  if (static_cast<int64_t>(mask.size()) != nz * ny * nx)
    throw std::invalid_argument("connected_components: mask size does not match its shape");
  Components c;
  c.label.assign(mask.size(), 0);
  c.sizes.push_back(0);
  std::vector<int64_t> stack;
  for (int64_t start = 0; start < static_cast<int64_t>(mask.size()); ++start) {
    if (!mask[start] || c.label[start]) continue;
    const auto id = static_cast<int32_t>(c.sizes.size());
    c.sizes.push_back(flood_fill(mask, shape, c.label, start, id, stack));
  }
  return c;
}

std::vector<uint8_t> largest_component(const std::vector<uint8_t>& mask, const std::array<int64_t, 3>& shape) {
  const Components c = connected_components(mask, shape);
  std::vector<uint8_t> keep(mask.size(), 0);
  if (c.sizes.size() < 2) return keep;
  // max_element returns the first of equal maxima: the component met first in raster order.
  const auto best = static_cast<int32_t>(std::max_element(c.sizes.begin() + 1, c.sizes.end()) - c.sizes.begin());
  for (size_t i = 0; i < mask.size(); ++i) keep[i] = c.label[i] == best;
  return keep;
}

}  // namespace medseg::postprocessing
