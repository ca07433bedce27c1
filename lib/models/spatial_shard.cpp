#include "models/spatial_shard.h"

#include <ATen/Functions.h>
#include <torch/csrc/autograd/custom_function.h>

#include <string>

#include "core/error.h"
#include "distributed/process_group.h"
#include "models/onednn_conv.h"

namespace medseg::models {
namespace {

using Ints = std::vector<int64_t>;
using distributed::SpatialShard;

// The shard's fields as saved_data (an AutogradContext keeps IValues, not structs).
bool use_onednn(const at::Tensor& x, const at::Tensor& w, const Ints& stride, const Ints& padding) {
  return x.dim() == 5 && onednn_conv3d_applies(x, w, stride, padding);
}

at::Tensor conv_forward(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const Ints& stride,
                        const Ints& padding) {
  if (use_onednn(x, w, stride, padding)) return onednn_conv3d_forward(x, w, b, stride, padding);
  const Ints ones(stride.size(), 1), zeros(stride.size(), 0);
  const c10::optional<at::Tensor> bias = b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt;
  return at::convolution(x, w, bias, stride, padding, ones, false, zeros, 1);
}

std::array<at::Tensor, 3> conv_backward(const at::Tensor& g, const at::Tensor& x, const at::Tensor& w,
                                        const Ints& stride, const Ints& padding, std::array<bool, 3> mask) {
  if (use_onednn(x, w, stride, padding)) return onednn_conv3d_backward(g, x, w, stride, padding, mask);
  const Ints ones(stride.size(), 1), zeros(stride.size(), 0);
  const Ints bias_sizes{w.size(0)};
  auto [gx, gw, gb] = at::convolution_backward(
      g.contiguous(), x, w, mask[2] ? at::OptionalIntArrayRef(bias_sizes) : at::OptionalIntArrayRef(), stride, padding,
      ones, false, zeros, 1, mask);
  return {gx, gw, gb};
}

struct ShardedConv : public torch::autograd::Function<ShardedConv> {
  // `padding` is already 0 along the shard axis; `halo` = {dim, left, right}.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b, Ints stride, Ints padding, Ints halo, const SpatialShard& shard) {
    const auto [l, r] = distributed::fetch_halos(x, halo[0], halo[1], halo[2], shard);
    ctx->save_for_backward({x, l, r, w});
    distributed::save_shard(ctx, shard);
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    ctx->saved_data["halo"] = halo;
    ctx->saved_data["bias"] = b.numel() > 0;  // empty: no bias (Function::apply cannot take undefined)
    return conv_forward(at::cat({l, x, r}, halo[0]), w, b.numel() > 0 ? b : at::Tensor(), stride, padding);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Ints halo = ctx->saved_data["halo"].toIntVector();
    // The padded slab again, for as long as this backward runs (not kept from forward: see header).
    const at::Tensor xp = at::cat({saved[1], saved[0], saved[2]}, halo[0]);
    const bool input_grad = ctx->needs_input_grad(0);
    const auto g = conv_backward(
        grads[0], xp, saved[3], ctx->saved_data["stride"].toIntVector(), ctx->saved_data["padding"].toIntVector(),
        {input_grad, ctx->needs_input_grad(1), ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)});
    // Skipping the exchange is safe: every rank runs the same graph, so either all of them need the
    // input's gradient (and exchange) or none does (the network's input).
    at::Tensor gx = input_grad
                        ? distributed::return_halo_grads(g[0], halo[0], halo[1], halo[2], distributed::load_shard(ctx))
                        : at::Tensor();
    return {gx, g[1], g[2], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Per (batch, channel) sums over the spatial dims: (B, C) -> all-reduced over the slabs.
at::Tensor global_sums(const at::Tensor& t, const SpatialShard& shard) {
  std::vector<int64_t> spatial;
  for (int64_t d = 2; d < t.dim(); ++d) spatial.push_back(d);
  at::Tensor s = t.sum(spatial);
  if (shard.active()) shard.group->all_reduce_sum(s);
  return s;
}

// Broadcasts a (B, C) statistic against (B, C, *spatial).
at::Tensor per_bc(const at::Tensor& s, int64_t dims) {
  std::vector<int64_t> shape = s.sizes().vec();
  shape.resize(dims, 1);
  return s.view(shape);
}

// batch norm's forward and backward with sums over all slabs. Saves x (the conv output, as
// at::batch_norm does), the mean and 1/std; the output is not saved, so the in-place LeakyReLU that
// follows is safe and no second activation is kept.
struct ShardedInstanceNorm : public torch::autograd::Function<ShardedInstanceNorm> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b, double eps, const SpatialShard& shard) {
    const int64_t dims = x.dim();
    const double n = static_cast<double>(x.numel() / (x.size(0) * x.size(1))) * shard.count;  // equal slabs
    const at::Tensor mean = global_sums(x, shard).div_(n);
    const at::Tensor var = global_sums((x - per_bc(mean, dims)).square_(), shard).div_(n);
    const at::Tensor invstd = (var + eps).rsqrt_();
    const bool affine = w.numel() > 0;
    at::Tensor scale = affine ? invstd * w.view({1, -1}) : invstd;
    at::Tensor shift = -mean * scale;
    if (affine) shift += b.view({1, -1});
    ctx->save_for_backward({x, mean, invstd, w});
    distributed::save_shard(ctx, shard);
    ctx->saved_data["n"] = n;
    at::Tensor y = x * per_bc(scale, dims);
    return y.add_(per_bc(shift, dims));  // in place: one activation-sized temporary, not two
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[3];
    const int64_t dims = x.dim();
    const double n = ctx->saved_data["n"].toDouble();
    const at::Tensor g = grads[0];
    at::Tensor xhat = (x - per_bc(saved[1], dims)).mul_(per_bc(saved[2], dims));
    std::vector<int64_t> spatial;
    for (int64_t d = 2; d < dims; ++d) spatial.push_back(d);
    // Local sums: the parameters' gradient is this slab's share (averaged over ranks by the caller).
    const at::Tensor sum_g = g.sum(spatial), sum_gx = (g * xhat).sum(spatial);
    at::Tensor both = at::stack({sum_g, sum_gx});
    const SpatialShard shard = distributed::load_shard(ctx);
    if (shard.active()) shard.group->all_reduce_sum(both);
    const bool affine = w.numel() > 0;
    // dL/dx = invstd * w * (g - mean(g) - xhat * mean(g * xhat)), means over the whole volume.
    at::Tensor scale = affine ? saved[2] * w.view({1, -1}) : saved[2];
    // In place on xhat: backward holds two activation-sized temporaries at most, as batch norm's.
    at::Tensor gx =
        xhat.mul_(per_bc(-both[1] / n, dims)).add_(g).sub_(per_bc(both[0] / n, dims)).mul_(per_bc(scale, dims));
    at::Tensor gw, gb;
    if (affine) {
      gw = sum_gx.sum(0);
      gb = sum_g.sum(0);
    }
    return {gx, gw, gb, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor sharded_instance_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                                 const distributed::SpatialShard& shard) {
  const at::Tensor none = at::empty({0}, x.options());
  return ShardedInstanceNorm::apply(x, weight.defined() ? weight : none, bias.defined() ? bias : none, eps, shard);
}

HaloWidth conv_halo(int64_t kernel, int64_t stride, int64_t padding) {
  return {padding, std::max<int64_t>(0, kernel - padding - stride)};
}

at::Tensor sharded_conv(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const Shape& stride,
                        const Shape& padding, const distributed::SpatialShard& shard) {
  const int64_t dim = shard.tensor_dim(), a = shard.axis;
  MEDSEG_CHECK(x.size(dim) % stride[a] == 0, "spatially sharded conv: the slab's ", x.size(dim),
               " planes along spatial axis ", a, " are not divisible by the conv's stride ", stride[a]);
  const HaloWidth h = conv_halo(weight.size(dim), stride[a], padding[a]);
  Ints pad = padding;
  pad[a] = 0;
  const at::Tensor b = bias.defined() ? bias : at::empty({0}, x.options());
  return ShardedConv::apply(x, weight, b, stride, pad, Ints{dim, h.left, h.right}, shard);
}

Shape total_strides(const std::vector<Shape>& strides, int dims) {
  Shape total(dims, 1);
  for (size_t s = 0; s < strides.size(); ++s) {
    const Shape st = per_axis(strides[s], dims, concat("strides[", s, "]"));
    for (int d = 0; d < dims; ++d) total[d] *= st[d];
  }
  return total;
}

void check_shardable_patch(const std::vector<Shape>& strides, int dims, const Shape& patch, int axis, int count) {
  MEDSEG_CHECK(static_cast<int>(patch.size()) == dims, "spatial sharding: patch has ", patch.size(),
               " axes, the network ", dims);
  MEDSEG_CHECK(axis >= 0 && axis < dims && count >= 1, "spatial sharding: axis ", axis, " / ", count,
               " slabs is not a split of a ", dims, "-D patch");
  const int64_t align = total_strides(strides, dims)[axis];
  MEDSEG_CHECK(patch[axis] % count == 0 && (patch[axis] / count) % align == 0, "spatial sharding: a patch extent of ",
               patch[axis], " along spatial axis ", axis, " does not split into ", count,
               " equal slabs whose length is divisible by ", align,
               " (the product of the network's strides along that axis); choose an extent divisible by ",
               align * count);
}

}  // namespace medseg::models
