#include "data/augment/resize.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace medseg::data::augment {

std::vector<int64_t> nearest_exact_indices(int64_t in, int64_t n) {
  const float scale = static_cast<float>(in) / static_cast<float>(n);  // torch computes it in float
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    idx[static_cast<size_t>(i)] =
        std::min(static_cast<int64_t>(std::floor((static_cast<float>(i) + 0.5f) * scale)), in - 1);
  return idx;
}

namespace {

// One pass over the output of a contiguous CPU tensor resized on its last three axes, each output voxel read
// at its three indices; index_select (one pass per axis, the first copying whole planes) took 3-5 % of a 128^3
// loader worker's time for the deep-supervision targets.
template <class T>
void pick_nearest_3d(const T* src, T* dst, int64_t outer, const std::array<int64_t, 3>& in,
                     const std::array<std::vector<int64_t>, 3>& idx) {
  const auto& iz = idx[0];
  const auto& iy = idx[1];
  const auto& ix = idx[2];
  // Along x the indices of a whole-number ratio (the deep-supervision scales) are x0 + step * i: a strided copy
  // the compiler vectorises, where an index list is one scalar load at a time.
  const auto nx = static_cast<int64_t>(ix.size());
  const int64_t step = nx > 1 ? ix[1] - ix[0] : 1;
  bool strided = true;
  for (int64_t i = 1; i < nx; ++i) strided = strided && ix[static_cast<size_t>(i)] == ix[0] + step * i;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t z : iz)
      for (int64_t y : iy) {
        const T* row = src + ((o * in[0] + z) * in[1] + y) * in[2];
        if (strided) {
          const T* first = row + ix[0];
          for (int64_t i = 0; i < nx; ++i) dst[i] = first[step * i];
        } else {
          for (int64_t i = 0; i < nx; ++i) dst[i] = row[ix[static_cast<size_t>(i)]];
        }
        dst += nx;
      }
}

bool resize_on_host(const at::Tensor& t, const std::vector<int64_t>& size, at::Tensor* out) {
  if (!t.is_cpu() || size.size() != 3 || t.dim() < 3 ||
      (t.scalar_type() != at::kShort && t.scalar_type() != at::kFloat))
    return false;
  const at::Tensor src = t.contiguous();
  const int64_t first = t.dim() - 3;
  std::array<int64_t, 3> in{};
  std::array<std::vector<int64_t>, 3> idx;
  std::vector<int64_t> out_sizes(t.sizes().begin(), t.sizes().end());
  for (int a = 0; a < 3; ++a) {
    in[static_cast<size_t>(a)] = t.size(first + a);
    idx[static_cast<size_t>(a)] = nearest_exact_indices(in[static_cast<size_t>(a)], size[static_cast<size_t>(a)]);
    out_sizes[static_cast<size_t>(first + a)] = size[static_cast<size_t>(a)];
  }
  const int64_t outer = t.numel() / (in[0] * in[1] * in[2]);
  *out = at::empty(out_sizes, t.options());
  if (t.scalar_type() == at::kShort)
    pick_nearest_3d(src.data_ptr<int16_t>(), out->data_ptr<int16_t>(), outer, in, idx);
  else
    pick_nearest_3d(src.data_ptr<float>(), out->data_ptr<float>(), outer, in, idx);
  return true;
}

}  // namespace

at::Tensor resize_nearest_exact(const at::Tensor& t, const std::vector<int64_t>& size) {
  at::Tensor out = t;
  const int64_t first = t.dim() - static_cast<int64_t>(size.size());
  bool same = true;
  for (size_t a = 0; a < size.size(); ++a) same = same && t.size(first + static_cast<int64_t>(a)) == size[a];
  if (same || (t.numel() > 0 && resize_on_host(t, size, &out))) return out;
  for (size_t a = 0; a < size.size(); ++a) {
    const int64_t dim = first + static_cast<int64_t>(a), in = t.size(dim), n = size[a];
    if (in == n) continue;
    const at::Tensor idx = at::tensor(nearest_exact_indices(in, n), at::kLong);
    // The index is built on the host; the gather runs where `t` lives (the device augmentation path).
    out = out.index_select(dim, t.is_cpu() ? idx : idx.to(t.device()));
  }
  return out;
}

}  // namespace medseg::data::augment
