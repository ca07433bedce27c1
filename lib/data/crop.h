#pragma once
// Copying a box out of a dense (channels, z, y, x) array, padding what lies outside it. The box may
// be anywhere, even fully outside (then the result is all padding).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "data/case_source.h"

namespace medseg::data {

template <class Src, class Dst>
void copy_box(const Src* src, int64_t channels, const Shape3& shape, const Box& box, Dst* out, Dst pad) {
  const Shape3 bs = box.shape();
  const int64_t plane = bs[1] * bs[2], vol = bs[0] * plane;
  std::fill(out, out + channels * vol, pad);
  Shape3 lo, hi;  // intersection with the case, in case coordinates
  for (int d = 0; d < 3; ++d) {
    lo[d] = std::max<int64_t>(box.lo[d], 0);
    hi[d] = std::min<int64_t>(box.hi[d], shape[d]);
    if (hi[d] <= lo[d]) return;
  }
  const int64_t run = hi[2] - lo[2];
  const int64_t src_vol = shape[0] * shape[1] * shape[2];
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t z = lo[0]; z < hi[0]; ++z) {
      for (int64_t y = lo[1]; y < hi[1]; ++y) {
        const Src* s = src + c * src_vol + (z * shape[1] + y) * shape[2] + lo[2];
        Dst* o = out + c * vol + (z - box.lo[0]) * plane + (y - box.lo[1]) * bs[2] + (lo[2] - box.lo[2]);
        if constexpr (std::is_same_v<Src, Dst>) {
          std::memcpy(o, s, static_cast<size_t>(run) * sizeof(Dst));
        } else {
          for (int64_t x = 0; x < run; ++x) o[x] = static_cast<Dst>(s[x]);
        }
      }
    }
  }
}

}  // namespace medseg::data
