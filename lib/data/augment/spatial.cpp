#include "data/augment/spatial.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/volume.h"
#include "data/crop.h"

namespace medseg::data::augment {

namespace {

Mat3 mul(const Mat3& a, const Mat3& b) {
  Mat3 r{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) r[i][j] += a[i][k] * b[k][j];
  return r;
}

Mat3 affine_3d(const std::array<double, 3>& a, const std::array<double, 3>& s) {
  const double c0 = std::cos(a[0]), s0 = std::sin(a[0]), c1 = std::cos(a[1]), s1 = std::sin(a[1]);
  const double c2 = std::cos(a[2]), s2 = std::sin(a[2]);
  const Mat3 rx{{{1, 0, 0}, {0, c0, -s0}, {0, s0, c0}}};
  const Mat3 ry{{{c1, 0, s1}, {0, 1, 0}, {-s1, 0, c1}}};
  const Mat3 rz{{{c2, -s2, 0}, {s2, c2, 0}, {0, 0, 1}}};
  const Mat3 sc{{{s[0], 0, 0}, {0, s[1], 0}, {0, 0, s[2]}}};
  return mul(mul(mul(rz, ry), rx), sc);
}

// The loader-patch voxels any output sample touches: per mapped axis the corners' extremes (the
// map is linear) plus one voxel for interpolation, clipped to the loader patch. Small angles and
// scale factors below 1 look at much less than the loader patch, which is sized for the worst case.
void touched_box(SpatialMap& mp) {
  const int first = 3 - mp.ndim;
  for (int d = 0; d < 3; ++d) {
    mp.lo[d] = 0;
    mp.crop[d] = mp.loader[d];
  }
  for (int r = 0; r < mp.ndim; ++r) {
    const int ax = first + r;
    double ext = 0;  // max |q_r| over the corners = sum of |m_rc| * half extent
    for (int c = 0; c < mp.ndim; ++c) ext += std::abs(mp.m[r][c]) * static_cast<double>(mp.patch[first + c] - 1) / 2.0;
    const double centre = static_cast<double>(mp.loader[ax] - 1) / 2.0;
    const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(centre - ext)) - 1);
    const int64_t hi = std::min<int64_t>(mp.loader[ax] - 1, static_cast<int64_t>(std::ceil(centre + ext)) + 1);
    mp.lo[ax] = lo;
    mp.crop[ax] = hi - lo + 1;
  }
}

}  // namespace

SpatialParams sample_spatial(const AugmentConfig& cfg, Rng& rng) {
  SpatialParams p;
  p.rotate = rng.bernoulli(cfg.p_rotation);
  p.scale = rng.bernoulli(cfg.p_scaling);
  p.nearest_image = cfg.nearest_image;
  p.nearest_seg = cfg.nearest_seg;
  const int n = cfg.in_plane() ? 1 : 3;
  if (p.rotate) {
    for (int d = 0; d < n; ++d) p.angles[d] = rng.uniform(-cfg.rotation_max, cfg.rotation_max);
    if (cfg.p_rot_per_axis < 1)
      for (int d = 0; d < n; ++d)
        if (!rng.bernoulli(cfg.p_rot_per_axis)) p.angles[d] = 0;
  }
  if (p.scale) {
    // No draw when the outcome is certain: nnU-Net's default keeps its draw sequence.
    const bool sync = cfg.p_sync_scaling >= 1 || (cfg.p_sync_scaling > 0 && rng.bernoulli(cfg.p_sync_scaling));
    if (sync) {
      p.scales.fill(rng.uniform(cfg.scale_lo, cfg.scale_hi));
    } else {  // in-plane: y and x
      for (int d = cfg.in_plane() ? 1 : 0; d < 3; ++d) p.scales[d] = rng.uniform(cfg.scale_lo, cfg.scale_hi);
    }
  }
  return p;
}

at::Tensor center_crop(const at::Tensor& t, const Shape3& patch, double pad) {
  const Shape3 s{t.size(1), t.size(2), t.size(3)};
  if (s == patch) return t;
  Box b;
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = s[d] / 2 - patch[d] / 2;
    b.hi[d] = b.lo[d] + patch[d];
  }
  at::Tensor src = t.contiguous();
  at::Tensor out = at::empty({t.size(0), patch[0], patch[1], patch[2]}, t.options());
  if (t.scalar_type() == at::kFloat) {
    copy_box(src.data_ptr<float>(), t.size(0), s, b, out.data_ptr<float>(), static_cast<float>(pad));
  } else if (t.scalar_type() == at::kShort) {
    copy_box(src.data_ptr<int16_t>(), t.size(0), s, b, out.data_ptr<int16_t>(), static_cast<int16_t>(pad));
  } else {
    throw Error("center_crop: expected a float32 or int16 tensor");
  }
  return out;
}

SpatialPlan plan_spatial(const Shape3& loader, const Shape3& patch, const SpatialParams& p, bool in_plane) {
  SpatialPlan plan;
  plan.active = p.active();
  SpatialMap& mp = plan.map;
  mp.loader = loader;
  mp.patch = patch;
  if (!plan.active) {  // BG2's crop_tensor: start floor(S / 2) - P // 2
    for (int d = 0; d < 3; ++d) {
      mp.lo[d] = loader[d] / 2 - patch[d] / 2;
      mp.crop[d] = patch[d];
    }
    return plan;
  }
  MEDSEG_CHECK(!in_plane || loader[0] == patch[0], "spatial transform: in-plane mode needs the loader patch z (",
               loader[0], ") to equal the final patch z (", patch[0], ")");
  mp.ndim = in_plane ? 2 : 3;
  if (in_plane) {
    const double c = std::cos(p.angles[0]), sn = std::sin(p.angles[0]), fy = p.scales[1], fx = p.scales[2];
    mp.m = Mat3{{{c * fy, -sn * fx, 0}, {sn * fy, c * fx, 0}, {0, 0, 1}}};
  } else {
    mp.m = affine_3d(p.angles, p.scales);
  }
  mp.nearest_image = p.nearest_image;
  mp.nearest_seg = p.nearest_seg;
  touched_box(mp);
  return plan;
}

Sample apply_spatial(const Sample& region, const SpatialPlan& plan, Sample* into) {
  const SpatialMap& mp = plan.map;
  const Shape3 rs{region.data.size(1), region.data.size(2), region.data.size(3)};
  MEDSEG_CHECK(rs == mp.crop && region.seg.sizes() == at::IntArrayRef({1, rs[0], rs[1], rs[2]}),
               "spatial transform: the region read does not have the planned shape ", shape_str(mp.crop));
  if (!plan.active) return region;
  const int64_t C = region.data.size(0);
  const at::Tensor data = region.data.contiguous(), seg = region.seg.contiguous();
  Sample out;
  if (into) {
    out = *into;
    MEDSEG_CHECK(out.data.sizes() == at::IntArrayRef({C, mp.patch[0], mp.patch[1], mp.patch[2]}) &&
                     out.seg.sizes() == at::IntArrayRef({1, mp.patch[0], mp.patch[1], mp.patch[2]}) &&
                     out.data.is_contiguous() && out.seg.is_contiguous(),
                 "spatial transform: output buffers do not have the patch shape ", shape_str(mp.patch));
  } else {
    out.data = at::empty({C, mp.patch[0], mp.patch[1], mp.patch[2]}, at::kFloat);
    out.seg = at::empty({1, mp.patch[0], mp.patch[1], mp.patch[2]}, at::kShort);
  }
  resample(mp, data.data_ptr<float>(), C, seg.data_ptr<int16_t>(), out.data.data_ptr<float>(),
           out.seg.data_ptr<int16_t>());
  return out;
}

Sample apply_spatial(const Sample& in, const Shape3& patch, const SpatialParams& p, bool in_plane) {
  const Shape3 s{in.data.size(1), in.data.size(2), in.data.size(3)};
  const SpatialPlan plan = plan_spatial(s, patch, p, in_plane);
  if (!plan.active) return {center_crop(in.data, patch, 0.0).clone(), center_crop(in.seg, patch, -1.0).clone()};
  const Box b = plan.read_box();
  auto cut = [&](const at::Tensor& t) {
    return t.slice(1, b.lo[0], b.hi[0]).slice(2, b.lo[1], b.hi[1]).slice(3, b.lo[2], b.hi[2]).contiguous();
  };
  return apply_spatial(Sample{cut(in.data), cut(in.seg)}, plan);
}

}  // namespace medseg::data::augment
