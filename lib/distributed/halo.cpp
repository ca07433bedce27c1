#include "distributed/halo.h"

#include <ATen/Functions.h>
#include <torch/csrc/autograd/custom_function.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "distributed/process_group.h"

namespace medseg::distributed {
namespace {

// Tags of the point-to-point messages: forward halos and their gradients travel separately, so a
// backward exchange can never be paired with a forward one.
constexpr int kForwardTag = 0x4841;  // "HA"
constexpr int kBackwardTag = 0x4842;

void check_halo(const at::Tensor& x, int64_t dim, int64_t left, int64_t right, const SpatialShard& s) {
  MEDSEG_CHECK(dim >= 2 && dim < x.dim(), "halo exchange: dim ", dim, " is not a spatial dim of a ", x.dim(),
               "-D tensor");
  MEDSEG_CHECK(left >= 0 && right >= 0, "halo exchange: negative halo width");
  const int64_t n = x.size(dim);
  MEDSEG_CHECK(left <= n && right <= n, "halo exchange: a halo of ", std::max(left, right),
               " planes is wider than the ", n, "-plane slab it comes from (slab ", s.index, " of ", s.count,
               " along spatial axis ", s.axis, "): use fewer slabs or a larger patch along that axis");
}

at::Tensor planes(const at::Tensor& like, int64_t dim, int64_t n) {
  std::vector<int64_t> shape = like.sizes().vec();
  shape[dim] = n;
  return at::zeros(shape, like.options());
}

// The shard's fields as saved_data (an AutogradContext keeps IValues, not structs).
struct HaloExchange : public torch::autograd::Function<HaloExchange> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t dim, int64_t left,
                            int64_t right, const SpatialShard& shard) {
    save_shard(ctx, shard);
    ctx->saved_data["halo"] = std::vector<int64_t>{dim, left, right};
    const auto [l, r] = fetch_halos(x, dim, left, right, shard);
    return at::cat({l, x, r}, dim);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto h = ctx->saved_data["halo"].toIntVector();
    return {return_halo_grads(grads[0], h[0], h[1], h[2], load_shard(ctx)), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

void save_shard(torch::autograd::AutogradContext* ctx, const SpatialShard& s) {
  ctx->saved_data["group"] = reinterpret_cast<int64_t>(s.group);
  ctx->saved_data["shard"] = std::vector<int64_t>{s.axis, s.index, s.count, s.prev_rank, s.next_rank};
}

SpatialShard load_shard(torch::autograd::AutogradContext* ctx) {
  const auto v = ctx->saved_data["shard"].toIntVector();
  SpatialShard s;
  s.group = reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt());
  s.axis = static_cast<int>(v[0]);
  s.index = static_cast<int>(v[1]);
  s.count = static_cast<int>(v[2]);
  s.prev_rank = static_cast<int>(v[3]);
  s.next_rank = static_cast<int>(v[4]);
  return s;
}

SpatialShard shard_over_group(ProcessGroup& group, int axis) {
  SpatialShard s;
  s.group = &group;
  s.axis = axis;
  s.index = group.rank();
  s.count = group.size();
  s.prev_rank = s.index > 0 ? s.index - 1 : -1;
  s.next_rank = s.index + 1 < s.count ? s.index + 1 : -1;
  return s;
}

std::pair<at::Tensor, at::Tensor> fetch_halos(const at::Tensor& x, int64_t dim, int64_t left, int64_t right,
                                              const SpatialShard& shard) {
  check_halo(x, dim, left, right, shard);
  at::Tensor l = planes(x, dim, left), r = planes(x, dim, right);
  if (!shard.active()) return {l, r};
  const int64_t n = x.size(dim);
  // The previous slab's right halo is this slab's first planes; the next slab's left halo its last.
  std::vector<ProcessGroup::Transfer> t;
  if (shard.prev_rank >= 0) {
    if (left > 0) t.push_back({shard.prev_rank, false, l});
    if (right > 0) t.push_back({shard.prev_rank, true, x.narrow(dim, 0, right)});
  }
  if (shard.next_rank >= 0) {
    if (right > 0) t.push_back({shard.next_rank, false, r});
    if (left > 0) t.push_back({shard.next_rank, true, x.narrow(dim, n - left, left)});
  }
  if (!t.empty()) shard.group->exchange(t, kForwardTag);
  return {l, r};
}

at::Tensor return_halo_grads(const at::Tensor& padded_grad, int64_t dim, int64_t left, int64_t right,
                             const SpatialShard& shard) {
  const int64_t n = padded_grad.size(dim) - left - right;
  at::Tensor gx = padded_grad.narrow(dim, left, n).contiguous();
  if (!shard.active()) return gx;
  // Mirror of fetch_halos: what was received goes back to its owner, what was sent comes back.
  std::vector<ProcessGroup::Transfer> t;
  at::Tensor from_prev, from_next;
  if (shard.prev_rank >= 0) {
    if (left > 0) t.push_back({shard.prev_rank, true, padded_grad.narrow(dim, 0, left)});
    if (right > 0) t.push_back({shard.prev_rank, false, from_prev = planes(gx, dim, right)});
  }
  if (shard.next_rank >= 0) {
    if (right > 0) t.push_back({shard.next_rank, true, padded_grad.narrow(dim, left + n, right)});
    if (left > 0) t.push_back({shard.next_rank, false, from_next = planes(gx, dim, left)});
  }
  if (t.empty()) return gx;
  shard.group->exchange(t, kBackwardTag);
  if (from_prev.defined()) gx.narrow(dim, 0, right).add_(from_prev);
  if (from_next.defined()) gx.narrow(dim, n - left, left).add_(from_next);
  return gx;
}

at::Tensor halo_exchange(const at::Tensor& x, int64_t dim, int64_t left, int64_t right, const SpatialShard& shard) {
  if (left == 0 && right == 0) return x;
  return HaloExchange::apply(x, dim, left, right, shard);
}

at::Tensor spatial_slab(const at::Tensor& x, int axis, int index, int count) {
  MEDSEG_CHECK(axis >= 0 && 2 + axis < x.dim(), "spatial slab: axis ", axis, " is not a spatial axis of a ", x.dim(),
               "-D (B, C, *spatial) tensor");
  MEDSEG_CHECK(count >= 1 && index >= 0 && index < count, "spatial slab: slab ", index, " of ", count,
               " does not exist");
  const int64_t extent = x.size(2 + axis);
  MEDSEG_CHECK(extent % count == 0, "spatial slab: extent ", extent, " along spatial axis ", axis,
               " is not divisible into ", count, " equal slabs");
  const int64_t len = extent / count;
  return x.narrow(2 + axis, index * len, len).contiguous();
}

}  // namespace medseg::distributed
