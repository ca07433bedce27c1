#include "visualization/views.h"

#include <algorithm>
#include <cmath>

#include "postprocessing/components.h"
#include "visualization/overlay.h"

namespace medseg::visualization {
namespace {

// For world axis w (x = L, y = P, z = S): the ITK index axis its direction column follows most, and
// the sign. An oblique direction that maps two world axes to one index axis falls back to the
// index axes as they are.
struct WorldAxes {
  std::array<int, 3> itk_axis{0, 1, 2};
  std::array<int, 3> sign{1, 1, 1};
};

WorldAxes world_axes(const Geometry& g) {
  WorldAxes w;
  std::array<bool, 3> used{false, false, false};
  for (int world = 0; world < 3; ++world) {
    int best = 0;
    for (int a = 1; a < 3; ++a)
      if (std::abs(g.direction[3 * world + a]) > std::abs(g.direction[3 * world + best])) best = a;
    if (used[best]) return {{0, 1, 2}, {1, 1, 1}};
    used[best] = true;
    w.itk_axis[world] = best;
    w.sign[world] = g.direction[3 * world + best] < 0 ? -1 : 1;
  }
  return w;
}

int array_axis(int itk_axis) { return 2 - itk_axis; }

void size_view(ViewSpec& v, const std::array<int64_t, 3>& shape, const Geometry& g) {
  const double w_mm = shape[v.h.array_axis] * g.spacing[2 - v.h.array_axis];
  const double h_mm = shape[v.v.array_axis] * g.spacing[2 - v.v.array_axis];
  const double scale = kViewSize / std::max(w_mm, h_mm);
  v.width = std::max(1, static_cast<int>(std::lround(w_mm * scale)));
  v.height = std::max(1, static_cast<int>(std::lround(h_mm * scale)));
}

}  // namespace

std::vector<ViewSpec> patient_views(const std::array<int64_t, 3>& shape, const Geometry& g) {
  const WorldAxes w = world_axes(g);
  auto axis = [&](int world, bool up) {
    // Screen y grows downwards: an axis drawn upwards (superior) is flipped when it rises.
    const bool rises = w.sign[world] > 0;
    return DisplayAxis{array_axis(w.itk_axis[world]), up ? rises : !rises};
  };
  std::vector<ViewSpec> all = {
      {"axial", array_axis(w.itk_axis[2]), axis(0, false), axis(1, false)},
      {"coronal", array_axis(w.itk_axis[1]), axis(0, false), axis(2, true)},
      {"sagittal", array_axis(w.itk_axis[0]), axis(1, false), axis(2, true)},
  };
  std::vector<ViewSpec> out;
  for (auto& v : all) {
    if (shape[v.h.array_axis] < 2 || shape[v.v.array_axis] < 2) continue;
    size_view(v, shape, g);
    out.push_back(v);
  }
  if (out.empty()) {
    size_view(all[0], shape, g);
    out.push_back(all[0]);
  }
  return out;
}

std::array<int64_t, 3> centre_slices(const std::array<int64_t, 3>& shape) {
  return {shape[0] / 2, shape[1] / 2, shape[2] / 2};
}

SliceChoice slices_through_largest_structure(const Volume& labels) {
  const auto& shape = labels.shape();
  std::vector<uint8_t> mask(static_cast<std::size_t>(labels.numel()));
  visit_pixels(labels, [&](const auto* p) {
    for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = p[i] != 0;
  });
  SliceChoice c{centre_slices(shape), false};
  const auto comp = postprocessing::connected_components(mask, shape);
  if (comp.sizes.size() < 2) return c;
  const auto largest =
      static_cast<int32_t>(std::max_element(comp.sizes.begin(), comp.sizes.end()) - comp.sizes.begin());
  std::array<std::vector<int64_t>, 3> counts;
  for (int a = 0; a < 3; ++a) counts[a].assign(static_cast<std::size_t>(shape[a]), 0);
  const int64_t ny = shape[1], nx = shape[2];
  for (int64_t i = 0; i < labels.numel(); ++i) {
    if (comp.label[static_cast<std::size_t>(i)] != largest) continue;
    ++counts[0][static_cast<std::size_t>(i / (ny * nx))];
    ++counts[1][static_cast<std::size_t>((i / nx) % ny)];
    ++counts[2][static_cast<std::size_t>(i % nx)];
  }
  for (int a = 0; a < 3; ++a) c.index[a] = std::max_element(counts[a].begin(), counts[a].end()) - counts[a].begin();
  c.found = true;
  return c;
}

}  // namespace medseg::visualization
