#include "data/patch_sampler.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/numeric.h"
#include "core/volume.h"

namespace medseg::data {

bool force_foreground(int64_t j, int64_t batch_size, double oversample) {
  return j >= round_half_even_int(static_cast<double>(batch_size) * (1.0 - oversample));
}

double batch_tail_share(int64_t batch_size, double oversample) {
  MEDSEG_CHECK(batch_size > 0, "batch_tail_share: batch size ", batch_size, " is not positive");
  int64_t forced = 0;
  for (int64_t j = 0; j < batch_size; ++j) forced += force_foreground(j, batch_size, oversample) ? 1 : 0;
  return static_cast<double>(forced) / static_cast<double>(batch_size);
}

namespace {

// Python floor division (the sampler's bounds use -need // 2 for odd need).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

using Mat3 = std::array<std::array<double, 3>, 3>;

Mat3 rot_axis(int axis, double a) {
  // batchgenerators' create_matrix_rotation_{x,y,z}_3d; "x" is the first array axis.
  const double c = std::cos(a), s = std::sin(a);
  if (axis == 0) return Mat3{{{1, 0, 0}, {0, c, -s}, {0, s, c}}};
  if (axis == 1) return Mat3{{{c, 0, s}, {0, 1, 0}, {-s, 0, c}}};
  return Mat3{{{c, -s, 0}, {s, c, 0}, {0, 0, 1}}};
}

}  // namespace

Shape3 initial_patch_size(const Shape3& final_patch, double max_rotation, bool dummy_2d, bool is_2d, double min_scale) {
  const double rot = std::min(std::abs(max_rotation), M_PI / 2);
  if (is_2d) {
    // rotate_coords_2d: row vector (a, b) times [[c, -s], [s, c]]
    const double a = static_cast<double>(final_patch[1]), b = static_cast<double>(final_patch[2]);
    const double c = std::cos(rot), s = std::sin(rot);
    const double r0 = std::max(std::abs(a * c + b * s), a), r1 = std::max(std::abs(a * -s + b * c), b);
    return {1, static_cast<int64_t>(r0 / min_scale), static_cast<int64_t>(r1 / min_scale)};
  }
  std::array<double, 3> v{}, best{};
  for (int d = 0; d < 3; ++d) v[d] = best[d] = static_cast<double>(final_patch[d]);
  for (int axis = 0; axis < 3; ++axis) {  // each axis on its own, as get_patch_size does
    const Mat3 m = rot_axis(axis, rot);
    for (int j = 0; j < 3; ++j) {
      const double r = v[0] * m[0][j] + v[1] * m[1][j] + v[2] * m[2][j];
      best[j] = std::max(best[j], std::abs(r));
    }
  }
  Shape3 out;
  for (int d = 0; d < 3; ++d) out[d] = static_cast<int64_t>(best[d] / min_scale);
  if (dummy_2d) out[0] = final_patch[0];
  return out;
}

PatchSampler::PatchSampler(const Shape3& patch, const Shape3& final_patch) : patch_(patch) {
  for (int d = 0; d < 3; ++d) {
    MEDSEG_CHECK(patch[d] >= final_patch[d] && final_patch[d] >= 1, "patch sampler: loader patch ", shape_str(patch),
                 " must contain the final patch ", shape_str(final_patch));
    need_to_pad_[d] = patch[d] - final_patch[d];
  }
}

namespace {

// The voxel a patch is centred on, or nullptr for a random patch; `label` is set to the forced foreground class.
const Shape3* pick_centre(bool force_fg, const ClassLocations& locations, Rng& rng, int& label) {
  const auto annotated = locations.find(kAnnotatedClass);
  if (!force_fg && annotated != locations.end()) {
    // Partially annotated data: centre on an annotated voxel (a case without any stays random).
    const auto& locs = annotated->second;
    if (locs.empty()) return nullptr;
    return &locs[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(locs.size()) - 1))];
  }
  if (!force_fg) return nullptr;
  std::vector<int> eligible;
  for (const auto& [l, locs] : locations)
    if (!locs.empty() && l != kAnnotatedClass) eligible.push_back(l);
  // Annotated voxels only stand in when the case has no foreground at all.
  if (eligible.empty() && annotated != locations.end() && !annotated->second.empty())
    eligible.push_back(kAnnotatedClass);
  if (eligible.empty()) return nullptr;  // a case without foreground falls back to a random crop
  label = eligible[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(eligible.size()) - 1))];
  const auto& locs = locations.at(label);
  return &locs[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(locs.size()) - 1))];
}

}  // namespace

PatchChoice PatchSampler::choose(const Shape3& shape, bool force_fg, const ClassLocations& locations, Rng& rng) const {
  Shape3 need = need_to_pad_, lbs, ubs;
  for (int d = 0; d < 3; ++d) {
    if (need[d] + shape[d] < patch_[d]) need[d] = patch_[d] - shape[d];  // small case: pad more
    lbs[d] = floor_div(-need[d], 2);
    ubs[d] = shape[d] + need[d] / 2 + need[d] % 2 - patch_[d];
  }
  PatchChoice out;
  const Shape3* voxel = pick_centre(force_fg, locations, rng, out.label);
  for (int d = 0; d < 3; ++d) {
    out.box.lo[d] = voxel ? std::max(lbs[d], (*voxel)[d] - patch_[d] / 2) : rng.randint(lbs[d], ubs[d]);
    out.box.hi[d] = out.box.lo[d] + patch_[d];
  }
  return out;
}

}  // namespace medseg::data
