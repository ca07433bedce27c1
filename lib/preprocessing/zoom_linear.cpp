// Compiled with -ffp-contract=off (lib/CMakeLists.txt): scipy's x86-64 build rounds every product and
// sum on its own, and a fused multiply-add would move the last bit that decides near ties.
#include "preprocessing/zoom_linear.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "core/error.h"

namespace medseg::preprocessing {

namespace {

// One output index along one axis: the two input indices (clamped) and their weights.
struct Tap {
  int64_t i0, i1;
  double w0, w1;
};

// scipy's NI_ZoomShift coordinates for grid_mode (zoom = n / m in double) and
// get_spline_interpolation_weights for order 1 (the last weight is 1 minus the others).
std::vector<Tap> taps(int64_t n, int64_t m) {
  const double zoom = static_cast<double>(n) / static_cast<double>(m);
  std::vector<Tap> t(static_cast<std::size_t>(m));
  for (int64_t o = 0; o < m; ++o) {
    double cc = static_cast<double>(o);
    if (n != m) {
      cc += 0.5;
      cc *= zoom;
      cc -= 0.5;
    }
    const double start = std::floor(cc);
    const double w0 = 1.0 - (cc - start);
    const auto s = static_cast<int64_t>(start);
    t[static_cast<std::size_t>(o)] = {std::clamp<int64_t>(s, 0, n - 1), std::clamp<int64_t>(s + 1, 0, n - 1), w0,
                                      1.0 - w0};
  }
  return t;
}

// Calls fn(flat index) for every voxel of shape `s` whose index along `axis` is k (axis -1: every voxel).
template <class Fn>
void for_box(const Shape3& s, int axis, int64_t k, Fn&& fn) {
  int64_t lo[3] = {0, 0, 0}, hi[3] = {s[0], s[1], s[2]};
  if (axis >= 0) lo[axis] = k, hi[axis] = k + 1;
  for (int64_t z = lo[0]; z < hi[0]; ++z)
    for (int64_t y = lo[1]; y < hi[1]; ++y)
      for (int64_t x = lo[2]; x < hi[2]; ++x) fn((z * s[1] + y) * s[2] + x);
}

// skimage's clip=True: dst's box (axis, k) clipped to the range of src's.
void clip_range(const double* src, const Shape3& in, double* dst, const Shape3& out, int axis, int64_t k) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for_box(in, axis, k, [&](int64_t i) { lo = std::min(lo, src[i]), hi = std::max(hi, src[i]); });
  for_box(out, axis, k, [&](int64_t i) { dst[i] = std::min(std::max(dst[i], lo), hi); });
}

}  // namespace

void zoom_linear(const double* src, const Shape3& in, double* dst, const Shape3& out, int slice_axis) {
  for (int a = 0; a < 3; ++a)
    MEDSEG_CHECK(in[a] >= 1 && out[a] >= 1, "zoom_linear: empty shape (input ", in[a], ", output ", out[a],
                 " along axis ", a, ")");
  MEDSEG_CHECK(slice_axis >= -1 && slice_axis <= 2, "zoom_linear: slice axis ", slice_axis, " not in -1..2");
  MEDSEG_CHECK(slice_axis < 0 || in[slice_axis] == out[slice_axis], "zoom_linear: the slice axis keeps its length (",
               slice_axis < 0 ? 0 : in[slice_axis], " -> ", slice_axis < 0 ? 0 : out[slice_axis], ")");
  const std::vector<Tap> tz = taps(in[0], out[0]), ty = taps(in[1], out[1]), tx = taps(in[2], out[2]);
  double* d = dst;
  for (const Tap& a : tz)
    for (const Tap& b : ty)
      for (const Tap& c : tx) {
        const int64_t iz[2] = {a.i0, a.i1}, iy[2] = {b.i0, b.i1}, ix[2] = {c.i0, c.i1};
        const double wz[2] = {a.w0, a.w1}, wy[2] = {b.w0, b.w1}, wx[2] = {c.w0, c.w1};
        // scipy's filter loop: the last axis fastest, each coefficient value * w_z * w_y * w_x, summed in turn.
        double t = 0.0;
        for (int p = 0; p < 2; ++p)
          for (int q = 0; q < 2; ++q)
            for (int r = 0; r < 2; ++r) {
              double coeff = src[(iz[p] * in[1] + iy[q]) * in[2] + ix[r]];
              coeff *= wz[p];
              coeff *= wy[q];
              coeff *= wx[r];
              t += coeff;
            }
        *d++ = t;
      }
  if (slice_axis < 0) return clip_range(src, in, dst, out, -1, 0);
  for (int64_t k = 0; k < in[slice_axis]; ++k) clip_range(src, in, dst, out, slice_axis, k);
}

}  // namespace medseg::preprocessing
