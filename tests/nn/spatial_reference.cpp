// The spatial transform as medseg computed it before the fused pass (data/augment/resample.h):
// ATen grid_sample on a grid built in double, one one-hot channel per present label. Kept here,
// out of the library, as the oracle the fused pass must equal (images within 1e-5, labels exactly).
#include "spatial_reference.h"

#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace medseg::data::augment {

namespace {

constexpr double kOutsideTolerance = 1e-3;  // voxels

// Output offsets p (from the patch centre) map to input offsets q = m p (from the input centre).
struct Mapping {
  Mat3 m{};
  int ndim = 3;  // 3, or 2 for (y, x) only
  int first() const { return 3 - ndim; }
};

// The input voxels any output sample touches: per axis [lo, hi] (inclusive), the corners' extremes
// (the map is linear) plus one voxel for interpolation, clipped to the input.
std::array<std::array<int64_t, 2>, 3> touched_box(const Shape3& in_shape, const Shape3& patch, const Mapping& mp) {
  std::array<std::array<int64_t, 2>, 3> box{};
  for (int d = 0; d < 3; ++d) box[d] = {0, in_shape[d] - 1};
  for (int r = 0; r < mp.ndim; ++r) {
    const int ax = mp.first() + r;
    double ext = 0;  // max |q_r| over the corners = sum of |m_rc| * half extent
    for (int c = 0; c < mp.ndim; ++c) ext += std::abs(mp.m[r][c]) * (patch[mp.first() + c] - 1) / 2.0;
    const double centre = (in_shape[ax] - 1) / 2.0;
    box[ax][0] = std::max<int64_t>(0, static_cast<int64_t>(std::floor(centre - ext)) - 1);
    box[ax][1] = std::min<int64_t>(in_shape[ax] - 1, static_cast<int64_t>(std::ceil(centre + ext)) + 1);
  }
  return box;
}

// Sampling grid (1, P..., ndim) in grid_sample's normalised (x, y[, z]) order over an input crop
// starting at `lo` with size `crop`, and the mask of output voxels whose sample position lies beyond
// the full input's outer voxel centres.
void make_grid(const Shape3& in_shape, const Shape3& lo, const Shape3& crop, const Shape3& patch, const Mapping& mp,
               at::Tensor& grid, at::Tensor& outside) {
  const int ndim = mp.ndim, first = mp.first();
  std::vector<int64_t> gshape{1};
  for (int d = first; d < 3; ++d) gshape.push_back(patch[d]);
  std::vector<int64_t> mshape(gshape.begin() + 1, gshape.end());
  gshape.push_back(ndim);
  grid = at::empty(gshape, at::kFloat);
  outside = at::empty(mshape, at::kBool);
  float* g = grid.data_ptr<float>();
  bool* o = outside.data_ptr<bool>();
  const int64_t pz = ndim == 3 ? patch[0] : 1;
  std::array<double, 3> centre{}, limit{};
  for (int d = 0; d < ndim; ++d) {
    const int64_t ax = first + d;
    centre[d] = (in_shape[ax] - 1) / 2.0 - static_cast<double>(lo[ax]);  // input centre in crop indices
    limit[d] = (in_shape[ax] - 1) / 2.0 + kOutsideTolerance;
  }
  for (int64_t i = 0; i < pz; ++i)
    for (int64_t j = 0; j < patch[1]; ++j)
      for (int64_t k = 0; k < patch[2]; ++k) {
        double p[3] = {0, 0, 0}, q[3] = {0, 0, 0};
        const int64_t idx[3] = {i, j, k};
        for (int d = 0; d < ndim; ++d) {
          const int64_t ax = first + d;
          p[d] = static_cast<double>(idx[ax]) - (patch[ax] - 1) / 2.0;
        }
        bool out = false;
        for (int r = 0; r < ndim; ++r) {
          for (int c = 0; c < ndim; ++c) q[r] += mp.m[r][c] * p[c];
          out = out || std::abs(q[r]) > limit[r];
        }
        // align_corners=False: crop index x sits at (2x + 1) / size - 1.
        for (int d = 0; d < ndim; ++d)
          g[ndim - 1 - d] = static_cast<float>((2.0 * (q[d] + centre[d]) + 1.0) / crop[first + d] - 1.0);
        g += ndim;
        *o++ = out;
      }
}

std::vector<int16_t> present_labels(const at::Tensor& seg) {
  std::vector<char> seen(65536, 0);
  const int16_t* s = seg.data_ptr<int16_t>();
  for (int64_t i = 0, n = seg.numel(); i < n; ++i) seen[static_cast<size_t>(s[i] + 32768)] = 1;
  std::vector<int16_t> out;
  for (int v = 0; v < 65536; ++v)
    if (seen[static_cast<size_t>(v)]) out.push_back(static_cast<int16_t>(v - 32768));
  return out;
}

}  // namespace

Sample reference_spatial(const Sample& in, const Shape3& patch, const SpatialParams& p, bool in_plane) {
  if (!p.active()) return {center_crop(in.data, patch, 0.0), center_crop(in.seg, patch, -1.0)};
  const Shape3 s{in.data.size(1), in.data.size(2), in.data.size(3)};
  const int ndim = in_plane ? 2 : 3;
  if (in_plane && s[0] != patch[0])
    throw Error("spatial transform: in-plane mode needs the loader patch z (" + std::to_string(s[0]) +
                ") to equal the final patch z (" + std::to_string(patch[0]) + ")");
  Mapping mp;
  mp.ndim = ndim;
  if (in_plane) {
    // BG2's create_affine_matrix_2d: R(a) @ diag(s_y, s_x).
    const double c = std::cos(p.angles[0]), sn = std::sin(p.angles[0]), fy = p.scales[1], fx = p.scales[2];
    mp.m = Mat3{{{c * fy, -sn * fx, 0}, {sn * fy, c * fx, 0}, {0, 0, 1}}};
  } else {
    // The matrix is the library's (its axes and signs are pinned by the right-angle tests in
    // data_augment_test.cpp); the resampling below is what this file is the oracle for.
    mp.m = plan_spatial(s, patch, p, false).map.m;
  }
  // Resample from the touched part of the loader patch only: small angles and scale factors below 1
  // look at much less than the whole loader patch, which is sized for the worst case.
  const auto box = touched_box(s, patch, mp);
  Shape3 lo{}, crop{};
  for (int d = 0; d < 3; ++d) {
    lo[d] = box[d][0];
    crop[d] = box[d][1] - box[d][0] + 1;
  }
  at::Tensor grid, outside;
  make_grid(s, lo, crop, patch, mp, grid, outside);
  auto cut = [&](const at::Tensor& t) {
    return t.slice(1, lo[0], lo[0] + crop[0])
        .slice(2, lo[1], lo[1] + crop[1])
        .slice(3, lo[2], lo[2] + crop[2])
        .contiguous();
  };

  const int64_t C = in.data.size(0);
  // 2D: channels and z-slices together form the batch of planes.
  auto as_input = [&](const at::Tensor& t, int64_t ch) {
    return in_plane ? t.reshape({1, ch * crop[0], crop[1], crop[2]}) : t.reshape({1, ch, crop[0], crop[1], crop[2]});
  };
  auto sample = [&](const at::Tensor& t) { return at::grid_sampler(t, grid, 0, 0, false)[0]; };
  Sample out;
  out.data = sample(as_input(cut(in.data), C)).reshape({C, patch[0], patch[1], patch[2]});

  // One one-hot channel (x1000) per present label at a time (a single call over all labels measured
  // slower: the concatenation and a strided argmax cost more than the shared weights save).
  at::Tensor seg = cut(in.seg);
  at::Tensor best, result = at::zeros({1, patch[0], patch[1], patch[2]}, at::kShort);
  for (int16_t u : present_labels(seg)) {
    at::Tensor onehot = seg.eq(u).to(at::kFloat).mul_(1000.0);
    // float16 rounding as in BG2, so near-ties resolve the same way.
    at::Tensor cur = sample(as_input(onehot, 1)).reshape({1, patch[0], patch[1], patch[2]});
    cur = cur.to(at::kHalf).to(at::kFloat);
    if (!best.defined()) {
      best = cur;
      result.fill_(u);
    } else {
      at::Tensor better = cur.gt(best);  // strict: the lowest label keeps ties
      best = at::maximum(best, cur);
      result.masked_fill_(better, u);
    }
  }
  result.masked_fill_(outside.reshape(in_plane ? std::vector<int64_t>{1, 1, patch[1], patch[2]}
                                               : std::vector<int64_t>{1, patch[0], patch[1], patch[2]}),
                      -1);
  out.seg = result;
  return out;
}

}  // namespace medseg::data::augment
