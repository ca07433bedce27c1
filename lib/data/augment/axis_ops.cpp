#include "data/augment/axis_ops.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>

namespace medseg::data::augment {

std::vector<int64_t> equal_length_axes(const Shape3& patch, bool is_2d) {
  const int64_t first = is_2d ? 1 : 0;
  std::map<int64_t, int64_t> count;
  for (int64_t a = first; a < 3; ++a) ++count[patch[a]];
  int64_t most = 0;
  for (const auto& [len, n] : count) most = std::max(most, n);
  std::vector<int64_t> axes;
  if (most < 2) return axes;
  for (int64_t a = first; a < 3; ++a)
    if (count[patch[a]] == most) axes.push_back(a);
  return axes;
}

AxisOps sample_axis_ops(const AugmentConfig& cfg, Rng& rng) {
  AxisOps ops;
  if (cfg.p_rot90 <= 0 && cfg.p_transpose <= 0) return ops;
  const std::vector<int64_t> axes = equal_length_axes(cfg.patch, cfg.is_2d);
  if (axes.size() < 2) return ops;
  const auto n = static_cast<int64_t>(axes.size());
  if (rng.bernoulli(cfg.p_rot90)) {
    ops.rot_k = rng.randint(0, 3);
    const int64_t i = rng.randint(0, n - 1);
    int64_t j = rng.randint(0, n - 2);  // a second, different axis
    if (j >= i) ++j;
    ops.rot_axes = {std::min(axes[i], axes[j]), std::max(axes[i], axes[j])};
  }
  if (rng.bernoulli(cfg.p_transpose)) {
    std::vector<int64_t> shuffled = axes;  // Fisher-Yates
    for (int64_t i = n - 1; i > 0; --i) std::swap(shuffled[i], shuffled[rng.randint(0, i)]);
    ops.order = {0, 1, 2};
    for (int64_t i = 0; i < n; ++i) ops.order[axes[i]] = shuffled[i];
  }
  return ops;
}

at::Tensor apply_axis_ops(const at::Tensor& t, const AxisOps& ops) {
  if (!ops.active()) return t;
  at::Tensor r = t;
  if (ops.rot_k != 0) r = at::rot90(r, ops.rot_k, {ops.rot_axes[0] + 1, ops.rot_axes[1] + 1});
  if (!ops.order.empty()) r = r.permute({0, ops.order[0] + 1, ops.order[1] + 1, ops.order[2] + 1});
  return r.contiguous();
}

}  // namespace medseg::data::augment
