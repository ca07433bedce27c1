#pragma once
// nearest-exact resizing (torch's interpolate(mode='nearest-exact') with a target size): output
// index i reads input min(floor((i + 0.5) * in / out), in - 1) on each axis. Done with index_select
// because the functional API warns on every call in LibTorch 1.13 and the op was renamed in 2.x.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace medseg::data::augment {

// Resizes the last size.size() axes of `t` to `size`.
at::Tensor resize_nearest_exact(const at::Tensor& t, const std::vector<int64_t>& size);

// The input index each of `out` outputs reads along one axis of length `in`.
std::vector<int64_t> nearest_exact_indices(int64_t in, int64_t out);

}  // namespace medseg::data::augment
