#pragma once
// Spatial parallelism at batch 1: each rank holds a slab of the patch along one spatial axis and the
// same weights. A convolution whose window crosses a slab border needs a few planes of the
// neighbour's slab (its halo); halo_exchange fetches them inside autograd, and its backward sends the
// halo planes' gradient back to the rank that owns them. See docs/spatial_parallel.md.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace torch::autograd {
struct AutogradContext;
}

namespace medseg::distributed {

class ProcessGroup;

// Which slab this rank holds. Slab `index` of `count` along spatial axis `axis` (0..dims-1, array
// order z, y, x; tensor dim 2 + axis). The neighbours' ranks are explicit (-1 at the volume border)
// so that a later data x space grid can place slabs on any ranks of `group`.
struct SpatialShard {
  ProcessGroup* group = nullptr;
  int axis = 0;
  int index = 0;
  int count = 1;
  int prev_rank = -1;
  int next_rank = -1;

  bool active() const { return group != nullptr && count > 1; }
  int64_t tensor_dim() const { return 2 + axis; }
};

// Slab i on rank i of `group` (every rank of the group holds one slab).
SpatialShard shard_over_group(ProcessGroup& group, int axis);

// cat(left planes of the previous slab, x, right planes of the next slab) along tensor dim `dim`;
// zeros where there is no neighbour (a convolution's zero padding at the volume border). Backward
// adds the gradient of the planes a neighbour received onto this rank's boundary planes. Every rank
// of the shard must call it with the same dim, left, right and slab length. Throws medseg::Error
// when a halo is wider than the slab it comes from.
at::Tensor halo_exchange(const at::Tensor& x, int64_t dim, int64_t left, int64_t right, const SpatialShard& shard);

// The two halves of halo_exchange without autograd, for layers that fuse the exchange into their
// own autograd function (they keep the halos instead of a padded copy of their input).
// fetch_halos: {left planes from prev, right planes from next}, zeros at the border.
std::pair<at::Tensor, at::Tensor> fetch_halos(const at::Tensor& x, int64_t dim, int64_t left, int64_t right,
                                              const SpatialShard& shard);
// From the gradient of cat(left halo, x, right halo): x's gradient, with the neighbours' halo
// gradients added onto the boundary planes they were read from.
at::Tensor return_halo_grads(const at::Tensor& padded_grad, int64_t dim, int64_t left, int64_t right,
                             const SpatialShard& shard);

// For layers with their own autograd function: the shard kept in, and read back from, the context.
void save_shard(torch::autograd::AutogradContext* ctx, const SpatialShard& s);
SpatialShard load_shard(torch::autograd::AutogradContext* ctx);

// Slab `index` of `count` equal slabs of x (B, C, *spatial) along spatial `axis`, contiguous (a copy
// unless the slab already is one). Throws medseg::Error when the extent is not divisible by count.
at::Tensor spatial_slab(const at::Tensor& x, int axis, int index, int count);

}  // namespace medseg::distributed
