#pragma once
// Copying a box out of a dense (channels, z, y, x) array, padding what lies outside it. The box may
// be anywhere, even fully outside (then the result is all padding).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "data/case_source.h"

namespace medseg::data {

// One row of the box: padding before and after the part [x0, x0 + run) that lies inside the case.
template <class Src, class Dst>
void copy_box_row(const Src* s, Dst* o, int64_t width, int64_t x0, int64_t run, Dst pad) {
  std::fill(o, o + x0, pad);
  if constexpr (std::is_same_v<Src, Dst>) {
    std::memcpy(o + x0, s, static_cast<size_t>(run) * sizeof(Dst));
  } else {
    for (int64_t x = 0; x < run; ++x) o[x0 + x] = static_cast<Dst>(s[x]);
  }
  std::fill(o + x0 + run, o + width, pad);
}

// Each value of `out` is written once: padding only where the box leaves the case (filling the whole box first
// and copying over it wrote most of it twice).
template <class Src, class Dst>
void copy_box(const Src* src, int64_t channels, const Shape3& shape, const Box& box, Dst* out, Dst pad) {
  const Shape3 bs = box.shape();
  const int64_t plane = bs[1] * bs[2], vol = bs[0] * plane;
  Shape3 lo, hi;  // intersection with the case, in case coordinates
  for (int d = 0; d < 3; ++d) {
    lo[d] = std::max<int64_t>(box.lo[d], 0);
    hi[d] = std::min<int64_t>(box.hi[d], shape[d]);
    if (hi[d] <= lo[d]) {
      std::fill(out, out + channels * vol, pad);
      return;
    }
  }
  const int64_t run = hi[2] - lo[2], x0 = lo[2] - box.lo[2];
  const int64_t src_vol = shape[0] * shape[1] * shape[2];
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t z = box.lo[0]; z < box.hi[0]; ++z) {
      Dst* o_plane = out + c * vol + (z - box.lo[0]) * plane;
      if (z < lo[0] || z >= hi[0]) {
        std::fill(o_plane, o_plane + plane, pad);
        continue;
      }
      for (int64_t y = box.lo[1]; y < box.hi[1]; ++y) {
        Dst* o = o_plane + (y - box.lo[1]) * bs[2];
        if (y < lo[1] || y >= hi[1]) {
          std::fill(o, o + bs[2], pad);
          continue;
        }
        copy_box_row(src + c * src_vol + (z * shape[1] + y) * shape[2] + lo[2], o, bs[2], x0, run, pad);
      }
    }
  }
}

}  // namespace medseg::data
