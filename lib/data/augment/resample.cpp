#include "data/augment/resample.h"

#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "data/augment/resample_detail.h"

// Built with -ffp-contract=off (lib/CMakeLists.txt): the 3D arithmetic must stay unfused to equal
// ATen's, and the 2D arithmetic fuses exactly where std::fma says.
//
// The resampling loops are also compiled for AVX2 and picked at run time (target_clones): the
// coordinate and weight arithmetic then runs 8 floats / 4 doubles wide and floor is one
// instruction. IEEE results are the same on either clone (no contraction, same roundings).
// Not under sanitizers: the clones are picked by an ifunc resolver that runs while the dynamic
// loader relocates, before a sanitizer runtime is ready (a TSan build crashed there).
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define MEDSEG_NO_TARGET_CLONES
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define MEDSEG_NO_TARGET_CLONES
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(MEDSEG_NO_TARGET_CLONES)
#define MEDSEG_WIDE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MEDSEG_WIDE_CLONES
#endif

namespace medseg::data::augment {

namespace {

using namespace detail;

MEDSEG_WIDE_CLONES void resample_3d(const SpatialMap& mp, const float* image, int64_t C, const int16_t* seg,
                                    float* out_image, int16_t* out_seg) {
  // #lizard forgives: the fused resampler's hot loop, kept whole so MEDSEG_WIDE_CLONES versions all of it
  const Geometry geo = geometry(mp);
  const int64_t D = mp.crop[0], H = mp.crop[1], W = mp.crop[2];
  const int64_t HW = H * W, in_vol = D * HW;
  const int64_t P1 = mp.patch[1], P2 = mp.patch[2], out_vol = mp.patch[0] * P1 * P2;
  LowestLabel lowest(seg, in_vol);
  std::vector<float> cz(static_cast<size_t>(P2)), cy(cz.size()), cx(cz.size());
  std::vector<char> outside(cz.size());
  int64_t o = 0;
  for (int64_t i = 0; i < mp.patch[0]; ++i)
    for (int64_t j = 0; j < P1; ++j) {
      const double pi = static_cast<double>(i) - geo.half[0], pj = static_cast<double>(j) - geo.half[1];
      double row[3];  // m[r][0] p0 + m[r][1] p1, summed as the reference does before adding m[r][2] p2
      for (int r = 0; r < 3; ++r) row[r] = 0.0 + mp.m[r][0] * pi + mp.m[r][1] * pj;
      for (int64_t k = 0; k < P2; ++k) {
        const double pk = static_cast<double>(k) - geo.half[2];
        double q[3];
        for (int r = 0; r < 3; ++r) q[r] = row[r] + mp.m[r][2] * pk;
        // Bitwise on ints, not ||: no branches, so the loop vectorises.
        outside[k] = static_cast<char>(static_cast<int>(std::abs(q[0]) > geo.limit[0]) |
                                       static_cast<int>(std::abs(q[1]) > geo.limit[1]) |
                                       static_cast<int>(std::abs(q[2]) > geo.limit[2]));
        cz[k] = unnormalise_3d(normalised(q[0] + geo.centre[0], D), D);
        cy[k] = unnormalise_3d(normalised(q[1] + geo.centre[1], H), H);
        cx[k] = unnormalise_3d(normalised(q[2] + geo.centre[2], W), W);
      }
      for (int64_t k = 0; k < P2; ++k, ++o) {
        const float iz = cz[k], iy = cy[k], ix = cx[k];
        const int64_t z0 = static_cast<int64_t>(std::floor(iz)), y0 = static_cast<int64_t>(std::floor(iy));
        const int64_t x0 = static_cast<int64_t>(std::floor(ix));
        const float fz1 = static_cast<float>(z0 + 1) - iz, fz0 = iz - static_cast<float>(z0);
        const float fy1 = static_cast<float>(y0 + 1) - iy, fy0 = iy - static_cast<float>(y0);
        const float fx1 = static_cast<float>(x0 + 1) - ix, fx0 = ix - static_cast<float>(x0);
        // ATen's corner weights and order: tnw, tne, tsw, tse, bnw, bne, bsw, bse.
        const float w[8] = {fx1 * fy1 * fz1, fx0 * fy1 * fz1, fx1 * fy0 * fz1, fx0 * fy0 * fz1,
                            fx1 * fy1 * fz0, fx0 * fy1 * fz0, fx1 * fy0 * fz0, fx0 * fy0 * fz0};
        const int64_t off[8] = {0, 1, W, W + 1, HW, HW + 1, HW + W, HW + W + 1};
        const int64_t base = (z0 * H + y0) * W + x0;  // may be negative; only in-bounds corners are read
        const bool interior = z0 >= 0 && z0 + 1 < D && y0 >= 0 && y0 + 1 < H && x0 >= 0 && x0 + 1 < W;
        if (interior) {  // the common case: no bounds checks, and one label for all corners needs no vote
          for (int64_t c = 0; c < C; ++c) {
            const float* src = image + c * in_vol + base;
            float acc = 0.f;
            for (int t = 0; t < 8; ++t) acc += src[off[t]] * w[t];
            out_image[c * out_vol + o] = acc;
          }
          if (!seg) continue;
          if (outside[k]) {
            out_seg[o] = -1;
            continue;
          }
          const int16_t* sg = seg + base;
          const int16_t l0 = sg[0];
          bool same = true;
          for (int t = 1; t < 8; ++t) same = same && sg[off[t]] == l0;
          if (same) {
            out_seg[o] = l0;
            continue;
          }
          Vote<false> vote;
          for (int t = 0; t < 8; ++t) vote.add(sg[off[t]], w[t]);
          out_seg[o] = vote.winner(lowest);
          continue;
        }
        bool in[8];
        for (int t = 0; t < 8; ++t) {
          const int64_t z = z0 + (t >> 2), y = y0 + ((t >> 1) & 1), x = x0 + (t & 1);
          in[t] = z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
        }
        for (int64_t c = 0; c < C; ++c) {
          const float* src = image + c * in_vol;
          float acc = 0.f;
          for (int t = 0; t < 8; ++t)
            if (in[t]) acc += src[base + off[t]] * w[t];
          out_image[c * out_vol + o] = acc;
        }
        if (!seg) continue;
        if (outside[k]) {
          out_seg[o] = -1;
          continue;
        }
        Vote<false> vote;
        for (int t = 0; t < 8; ++t)
          if (in[t]) vote.add(seg[base + off[t]], w[t]);
        out_seg[o] = vote.winner(lowest);
      }
    }
}

// 2D and dummy-2D: one (y, x) map for every z-slice and channel.
MEDSEG_WIDE_CLONES void resample_in_plane(const SpatialMap& mp, const float* image, int64_t C, const int16_t* seg,
                                          float* out_image, int16_t* out_seg) {
  // #lizard forgives: the fused resampler's hot loop, kept whole so MEDSEG_WIDE_CLONES versions all of it
  const Geometry geo = geometry(mp);
  const int64_t Z = mp.crop[0], H = mp.crop[1], W = mp.crop[2], HW = H * W;
  const int64_t P1 = mp.patch[1], P2 = mp.patch[2], plane = P1 * P2;
  MEDSEG_CHECK(mp.patch[0] == Z, "spatial transform: in-plane resampling needs patch z == crop z");
  struct Point {
    int64_t base;
    float w[4];  // nw, ne, sw, se
    bool in[4];
    bool outside;
  };
  std::vector<Point> pts(static_cast<size_t>(plane));
  for (int64_t j = 0, o = 0; j < P1; ++j)
    for (int64_t k = 0; k < P2; ++k, ++o) {
      const double pj = static_cast<double>(j) - geo.half[1], pk = static_cast<double>(k) - geo.half[2];
      double q[2];
      for (int r = 0; r < 2; ++r) q[r] = 0.0 + mp.m[r][0] * pj + mp.m[r][1] * pk;
      Point& p = pts[static_cast<size_t>(o)];
      p.outside = std::abs(q[0]) > geo.limit[0] || std::abs(q[1]) > geo.limit[1];
      const float y = unnormalise_2d(normalised(q[0] + geo.centre[0], H), H);
      const float x = unnormalise_2d(normalised(q[1] + geo.centre[1], W), W);
      const float yn = std::floor(y), xw = std::floor(x);
      const float n = y - yn, s = 1.f - n, wx = x - xw, e = 1.f - wx;
      p.w[0] = s * e;
      p.w[1] = s * wx;
      p.w[2] = n * e;
      p.w[3] = n * wx;
      const int64_t y0 = static_cast<int64_t>(yn), x0 = static_cast<int64_t>(xw);
      for (int t = 0; t < 4; ++t) {
        const int64_t yy = y0 + (t >> 1), xx = x0 + (t & 1);
        p.in[t] = yy >= 0 && yy < H && xx >= 0 && xx < W;
      }
      p.base = y0 * W + x0;
    }
  const int64_t off[4] = {0, 1, W, W + 1};
  for (int64_t c = 0; c < C * Z; ++c) {
    const float* src = image + c * HW;
    float* dst = out_image + c * plane;
    for (int64_t o = 0; o < plane; ++o) {
      const Point& p = pts[static_cast<size_t>(o)];
      float v[4];
      for (int t = 0; t < 4; ++t) v[t] = p.in[t] ? src[p.base + off[t]] : 0.f;
      dst[o] = std::fma(v[3], p.w[3], std::fma(v[2], p.w[2], std::fma(v[1], p.w[1], v[0] * p.w[0])));
    }
  }
  if (!seg) return;
  LowestLabel lowest(seg, Z * HW);
  for (int64_t z = 0; z < Z; ++z) {
    const int16_t* src = seg + z * HW;
    int16_t* dst = out_seg + z * plane;
    for (int64_t o = 0; o < plane; ++o) {
      const Point& p = pts[static_cast<size_t>(o)];
      if (p.outside) {
        dst[o] = -1;
        continue;
      }
      Vote<true> vote;
      for (int t = 0; t < 4; ++t)
        if (p.in[t]) vote.add(src[p.base + off[t]], p.w[t]);
      dst[o] = vote.winner(lowest);
    }
  }
}

// grid_sample's nearest (the *Ord0 trainers): the positions of the linear paths, rounded half to even as
// ATen's nearest kernels round; a rounded position outside the crop reads 0 (zeros padding). Labels are
// sampled as they are, then -1 beyond the outer voxel centres (BG2's constant-padding fix-up).
void resample_nearest(const SpatialMap& mp, const float* image, int64_t C, const int16_t* seg, float* out_image,
                      int16_t* out_seg) {
  const Geometry geo = geometry(mp);
  const int first = 3 - mp.ndim;
  const int64_t D = mp.crop[0], H = mp.crop[1], W = mp.crop[2], HW = H * W, in_vol = D * HW;
  const int64_t P0 = mp.patch[0], P1 = mp.patch[1], P2 = mp.patch[2], out_vol = P0 * P1 * P2;
  for (int64_t i = 0, o = 0; i < P0; ++i)
    for (int64_t j = 0; j < P1; ++j)
      for (int64_t k = 0; k < P2; ++k, ++o) {
        const double p[3] = {static_cast<double>(i) - geo.half[0], static_cast<double>(j) - geo.half[1],
                             static_cast<double>(k) - geo.half[2]};
        int64_t idx[3] = {i, 0, 0};  // in-plane: z passes through
        bool in = true, outside = false;
        for (int r = 0; r < mp.ndim; ++r) {
          double q = 0.0;
          for (int c = 0; c < mp.ndim; ++c) q += mp.m[r][c] * p[first + c];
          const int ax = first + r;
          outside = outside || std::abs(q) > geo.limit[r];
          const float g = normalised(q + geo.centre[r], mp.crop[ax]);
          const float u = mp.ndim == 3 ? unnormalise_3d(g, mp.crop[ax]) : unnormalise_2d(g, mp.crop[ax]);
          idx[ax] = static_cast<int64_t>(std::nearbyint(u));
          in = in && idx[ax] >= 0 && idx[ax] < mp.crop[ax];
        }
        const int64_t at = (idx[0] * H + idx[1]) * W + idx[2];
        for (int64_t c = 0; c < C; ++c) out_image[c * out_vol + o] = in ? image[c * in_vol + at] : 0.f;
        if (seg) out_seg[o] = outside ? int16_t{-1} : (in ? seg[at] : int16_t{0});
      }
}

void resample_linear(const SpatialMap& map, const float* image, int64_t channels, const int16_t* seg, float* out_image,
                     int16_t* out_seg, ResampleKernel kernel) {
  if (map.ndim == 3) {
    if (kernel == ResampleKernel::Portable || !resample_3d_avx512(map, image, channels, seg, out_image, out_seg))
      resample_3d(map, image, channels, seg, out_image, out_seg);
  } else {
    resample_in_plane(map, image, channels, seg, out_image, out_seg);
  }
}

}  // namespace

void resample(const SpatialMap& map, const float* image, int64_t channels, const int16_t* seg, float* out_image,
              int16_t* out_seg, ResampleKernel kernel) {
  // Each part (image, labels) goes to its mode's pass; nnU-Net's default runs one fused linear pass.
  const bool linear_image = channels > 0 && !map.nearest_image, linear_seg = seg && !map.nearest_seg;
  if (linear_image || linear_seg)
    resample_linear(map, linear_image ? image : nullptr, linear_image ? channels : 0, linear_seg ? seg : nullptr,
                    out_image, out_seg, kernel);
  if ((channels > 0 && map.nearest_image) || (seg && map.nearest_seg))
    resample_nearest(map, linear_image ? nullptr : image, linear_image ? 0 : channels, linear_seg ? nullptr : seg,
                     out_image, out_seg);
}

}  // namespace medseg::data::augment
