#pragma once
// nnU-Net's transpose_forward: array axes (z, y, x) are permuted so that output axis k is input
// axis perm[k] (numpy's arr.transpose(perm)); spacings in array order follow the same rule.
// transpose_backward (the inverse permutation) undoes it.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/grid.h"

namespace medseg::preprocessing {

using Perm3 = std::array<int, 3>;
// Checks that `v` is a permutation of {0, 1, 2}; throws Error naming `source` otherwise.
Perm3 to_perm3(const std::vector<int>& v, const std::string& source);
Perm3 inverse_perm(const Perm3& p);

template <class T>
std::array<T, 3> permute3(const std::array<T, 3>& a, const Perm3& p) {
  return {a[p[0]], a[p[1]], a[p[2]]};
}

// dst (shape permute3(in, p)) = src (shape in) transposed.
template <class T>
void transpose_array(const T* src, const Shape3& in, const Perm3& p, T* dst) {
  const Shape3 stride{in[1] * in[2], in[2], 1};
  const Shape3 out = permute3(in, p);
  const int64_t s0 = stride[p[0]], s1 = stride[p[1]], s2 = stride[p[2]];
  for (int64_t i = 0; i < out[0]; ++i)
    for (int64_t j = 0; j < out[1]; ++j) {
      const T* row = src + i * s0 + j * s1;
      for (int64_t k = 0; k < out[2]; ++k) *dst++ = row[k * s2];
    }
}

template <class T>
std::vector<T> transpose_vector(const std::vector<T>& src, const Shape3& in, const Perm3& p) {
  std::vector<T> out(src.size());
  transpose_array(src.data(), in, p, out.data());
  return out;
}

}  // namespace medseg::preprocessing
