// The spatial transform with grid_sample, from the plan spatial.h computes. The sampling grid is
// built in double with the fused pass's operations in its order (resample.cpp), so on CPU tensors
// the positions, and therefore the 3D grid_sampler's arithmetic that resample.cpp copies, are the
// same: images and labels come out equal to the CPU path.
#include <ATen/ATen.h>

#include <vector>

#include "data/augment/device_ops.h"
#include "data/augment/spatial.h"

namespace medseg::data::augment::device {

namespace {

struct Grid {
  at::Tensor grid;     // (1, P..., ndim) float32, grid_sample's normalised (x, y[, z]) order
  at::Tensor outside;  // (P...) bool: sample beyond the loader patch's outer voxel centres
};

// Output offset p (from the patch centre) samples the loader patch at q = m p from its centre; the
// grid addresses the read box (map.lo, map.crop) with align_corners=False.
Grid sampling_grid(const SpatialMap& mp, const at::Device& dev) {
  const int nd = mp.ndim, first = 3 - nd;
  const auto opts = at::TensorOptions().dtype(at::kDouble).device(dev);
  std::vector<at::Tensor> p;  // offsets per mapped axis, shaped to broadcast over the output
  for (int c = 0; c < nd; ++c) {
    std::vector<int64_t> shape(static_cast<size_t>(nd), 1);
    shape[static_cast<size_t>(c)] = -1;
    const int64_t n = mp.patch[first + c];
    p.push_back((at::arange(n, opts) - static_cast<double>(n - 1) / 2.0).view(shape));
  }
  std::vector<at::Tensor> g(static_cast<size_t>(nd));
  at::Tensor outside;
  for (int r = 0; r < nd; ++r) {
    const int ax = first + r;
    at::Tensor q = p[0] * mp.m[r][0];
    for (int c = 1; c < nd; ++c) q = q + p[static_cast<size_t>(c)] * mp.m[r][c];
    const double centre = static_cast<double>(mp.loader[ax] - 1) / 2.0;
    const at::Tensor out = q.abs() > centre + kOutsideTolerance;
    outside = r == 0 ? out : outside | out;
    const at::Tensor pos = q + (centre - static_cast<double>(mp.lo[ax]));
    g[static_cast<size_t>(nd - 1 - r)] = ((pos * 2.0 + 1.0) / static_cast<double>(mp.crop[ax]) - 1.0);
  }
  std::vector<int64_t> size;
  for (int d = first; d < 3; ++d) size.push_back(mp.patch[d]);
  for (auto& t : g) t = t.expand(size);
  return {at::stack(g, -1).to(at::kFloat).unsqueeze(0), outside.expand(size)};
}

// Bilinear / trilinear (or nearest), zeros outside, align_corners=False. In-plane: channels and
// z-slices form the planes, as BG2's Convert3DTo2D does.
at::Tensor sample(const at::Tensor& region, const at::Tensor& grid, bool in_plane, bool nearest = false) {
  const int64_t C = region.size(0), Z = region.size(1), mode = nearest ? 1 : 0;
  if (!in_plane) return at::grid_sampler(region.unsqueeze(0), grid, mode, 0, false)[0];
  at::Tensor planes = region.reshape({1, C * Z, region.size(2), region.size(3)});
  at::Tensor out = at::grid_sampler(planes, grid, mode, 0, false)[0];
  return out.view({C, Z, out.size(1), out.size(2)});
}

// BG2's segmentation resampling: one one-hot channel (x1000) per label present in the read box
// (-1 included), float16 rounding, the largest wins; argmax takes the first maximum, and the labels
// are sorted, so the lowest label keeps ties.
at::Tensor resample_labels(const at::Tensor& region, const Grid& g, bool in_plane, bool nearest) {
  if (nearest) {  // the *Ord0 trainers: the labels as they are, then -1 outside
    at::Tensor seg = sample(region.unsqueeze(0).to(at::kFloat), g.grid, in_plane, true)[0].to(at::kShort);
    seg.masked_fill_(in_plane ? g.outside.unsqueeze(0) : g.outside, -1);
    return seg.unsqueeze(0);
  }
  const at::Tensor labels = std::get<0>(at::_unique(region, /*sorted=*/true));
  const at::Tensor onehot = region.eq(labels.view({-1, 1, 1, 1})).to(at::kFloat).mul_(kOneHotScale);
  const at::Tensor scores = sample(onehot, g.grid, in_plane).to(at::kHalf).to(at::kFloat);
  const at::Tensor best = scores.argmax(0);  // (P...)
  at::Tensor seg = labels.index_select(0, best.flatten()).view(best.sizes());
  seg.masked_fill_(in_plane ? g.outside.unsqueeze(0) : g.outside, -1);
  return seg.unsqueeze(0);
}

}  // namespace

Sample spatial(const at::Tensor& data, const at::Tensor& seg, const SpatialParams& p, const AugmentConfig& cfg) {
  const Shape3 loader{data.size(1), data.size(2), data.size(3)};
  const SpatialPlan plan = plan_spatial(loader, cfg.patch, p, cfg.in_plane());
  const Box b = plan.read_box();
  auto cut = [&](const at::Tensor& t) {
    return t.slice(1, b.lo[0], b.hi[0]).slice(2, b.lo[1], b.hi[1]).slice(3, b.lo[2], b.hi[2]);
  };
  if (!plan.active) return {cut(data), cut(seg)};  // the centred final patch
  const Grid g = sampling_grid(plan.map, data.device());
  return {sample(cut(data), g.grid, cfg.in_plane(), p.nearest_image),
          resample_labels(cut(seg)[0], g, cfg.in_plane(), p.nearest_seg)};
}

}  // namespace medseg::data::augment::device
