// resample_3d on AVX-512: 16 output voxels of a row at a time, corners read with gathers.
//
// Every lane does the portable kernel's operations in its order, with the same roundings (double coordinates,
// float weights and sums, no contraction: -ffp-contract=off, and the intrinsics name each operation), so the
// two kernels give the same bits; tests/nn/data_spatial_fused_test.cpp holds them to it. What changes is
// the control flow: corners outside the crop are masked off instead of branched around, and only the voxels whose
// eight neighbours disagree on the label (or lie partly outside the crop) leave the vectors for the scalar vote.
//
// Profiled at a 128^3 patch the portable kernel was 58 % of a loader worker's time (about 37 ms a resampled sample:
// scalar coordinate arithmetic, dependent scalar sums); this one takes 14.5 ms (docs/data_pipeline.md).
#include <cstring>

#include "core/cpu_features.h"
#include "data/augment/resample_detail.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MEDSEG_RESAMPLE_AVX512 1
#include <immintrin.h>
#endif

namespace medseg::data::augment::detail {

#ifdef MEDSEG_RESAMPLE_AVX512

namespace {

#define MEDSEG_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

// One output row's constants (the portable kernel's per-row values, broadcast).
struct RowCoords {
  double row[3];  // m[r][0] p0 + m[r][1] p1
  const Geometry* geo;
  const SpatialMap* mp;
};

// Sixteen voxels' corners: the first corner's index, the trilinear weights in ATen's corner order, which
// corners lie inside the crop, and which voxels are interior (all eight inside) or beyond the loader patch.
struct Lanes {
  __m512i base;
  __m512 w[8];
  __mmask16 in[8];
  __mmask16 interior, outside;
};

// One axis of normalised() then unnormalise_3d() for 8 voxels (resample_detail.h), flagging |q| > limit.
MEDSEG_AVX512 inline __m256 axis_coord(double row, double m2, __m512d pk, int r, const Geometry& geo, int64_t crop,
                                       __mmask8* outside) {
  const __m512d q = _mm512_add_pd(_mm512_set1_pd(row), _mm512_mul_pd(_mm512_set1_pd(m2), pk));
  *outside |= _mm512_cmp_pd_mask(_mm512_abs_pd(q), _mm512_set1_pd(geo.limit[r]), _CMP_GT_OQ);
  const __m512d pos = _mm512_add_pd(q, _mm512_set1_pd(geo.centre[r]));
  const __m512d two_pos_1 = _mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(2.0), pos), _mm512_set1_pd(1.0));
  const __m512d g =
      _mm512_sub_pd(_mm512_div_pd(two_pos_1, _mm512_set1_pd(static_cast<double>(crop))), _mm512_set1_pd(1.0));
  return _mm512_cvtpd_ps(g);
}

MEDSEG_AVX512 inline __m512 unnormalise(__m512 g, int64_t size) {
  const __m512 t =
      _mm512_sub_ps(_mm512_mul_ps(_mm512_add_ps(g, _mm512_set1_ps(1.f)), _mm512_set1_ps(static_cast<float>(size))),
                    _mm512_set1_ps(1.f));
  return _mm512_div_ps(t, _mm512_set1_ps(2.f));
}

// Input positions of voxels k0 .. k0 + 15 of the row, per axis (z, y, x), and the outside flags.
MEDSEG_AVX512 inline void row_positions(const RowCoords& rc, int64_t k0, __m512 pos[3], __mmask16* outside) {
  const Geometry& geo = *rc.geo;
  const SpatialMap& mp = *rc.mp;
  __m256 half_pos[2][3];
  __mmask8 out[2] = {0, 0};
  for (int h = 0; h < 2; ++h) {
    const __m256i k =
        _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(k0) + 8 * h), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m512d pk = _mm512_sub_pd(_mm512_cvtepi32_pd(k), _mm512_set1_pd(geo.half[2]));
    for (int r = 0; r < 3; ++r) half_pos[h][r] = axis_coord(rc.row[r], mp.m[r][2], pk, r, geo, mp.crop[r], &out[h]);
  }
  for (int r = 0; r < 3; ++r) {
    const __m512 g = _mm512_insertf32x8(_mm512_castps256_ps512(half_pos[0][r]), half_pos[1][r], 1);
    pos[r] = unnormalise(g, mp.crop[r]);
  }
  *outside = static_cast<__mmask16>(out[0] | (static_cast<unsigned>(out[1]) << 8));
}

// Corner 0 of each axis inside [0, size) and corner 1 inside it.
MEDSEG_AVX512 inline void corner_masks(__m512i i0, int64_t size, __mmask16 live, __mmask16* lo, __mmask16* hi) {
  const __m512i n = _mm512_set1_epi32(static_cast<int>(size));
  *lo = _mm512_mask_cmpge_epi32_mask(live, i0, _mm512_setzero_si512()) & _mm512_cmplt_epi32_mask(i0, n);
  const __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(1));
  *hi = _mm512_mask_cmpge_epi32_mask(live, i1, _mm512_setzero_si512()) & _mm512_cmplt_epi32_mask(i1, n);
}

MEDSEG_AVX512 inline Lanes lanes(const RowCoords& rc, int64_t k0, __mmask16 live) {
  const SpatialMap& mp = *rc.mp;
  __m512 pos[3];
  Lanes L;
  row_positions(rc, k0, pos, &L.outside);
  __m512 f0[3], f1[3];  // portable kernel: f1 = (i0 + 1) - pos, f0 = pos - i0
  __m512i i0[3];
  __mmask16 lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    const __m512 fl = _mm512_roundscale_ps(pos[a], _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    i0[a] = _mm512_cvttps_epi32(fl);
    f1[a] = _mm512_sub_ps(_mm512_add_ps(fl, _mm512_set1_ps(1.f)), pos[a]);
    f0[a] = _mm512_sub_ps(pos[a], fl);
    corner_masks(i0[a], mp.crop[a], live, &lo[a], &hi[a]);
  }
  const auto H = static_cast<int>(mp.crop[1]), W = static_cast<int>(mp.crop[2]);
  L.base = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_add_epi32(_mm512_mullo_epi32(i0[0], _mm512_set1_epi32(H)), i0[1]),
                                               _mm512_set1_epi32(W)),
                            i0[2]);
  for (int t = 0; t < 8; ++t) {  // ATen's order: tnw, tne, tsw, tse, bnw, bne, bsw, bse; weight (x y) z
    const int bz = t >> 2, by = (t >> 1) & 1, bx = t & 1;
    const __m512 wx = bx ? f0[2] : f1[2], wy = by ? f0[1] : f1[1], wz = bz ? f0[0] : f1[0];
    L.w[t] = _mm512_mul_ps(_mm512_mul_ps(wx, wy), wz);
    L.in[t] = (bz ? hi[0] : lo[0]) & (by ? hi[1] : lo[1]) & (bx ? hi[2] : lo[2]);
  }
  L.interior = lo[0] & hi[0] & lo[1] & hi[1] & lo[2] & hi[2];
  L.outside &= live;
  return L;
}

struct Kernel {
  const SpatialMap& mp;
  const float* image;
  int64_t C;
  const int16_t* seg;
  float* out_image;
  int16_t* out_seg;
  int64_t in_vol, out_vol;
  int32_t off[8];
  mutable LowestLabel lowest;  // found by the first vote that nothing scores

  // Interior voxels: one 64-bit gather reads the x0 and x0 + 1 corners together (gathers cost by the element).
  // g[t], g[t + 1]: the pairs of corner row t (0, 2, 4 or 6) for voxels 0-7 and 8-15 of the chunk.
  MEDSEG_AVX512 void gather_pairs(const Lanes& L, const float* src, int t, __mmask16 live, __m512i* g) const {
    const __m512i idx = _mm512_add_epi32(L.base, _mm512_set1_epi32(off[t]));
    const __m256i lo = _mm512_castsi512_si256(idx), hi = _mm512_extracti32x8_epi32(idx, 1);
    if (live == 0xFFFF) {  // whole chunks, nearly all of them: no merge into a zeroed register
      g[t] = _mm512_i32gather_epi64(lo, src, 4);
      g[t + 1] = _mm512_i32gather_epi64(hi, src, 4);
      return;
    }
    const __m512i zero = _mm512_setzero_si512();
    g[t] = _mm512_mask_i32gather_epi64(zero, static_cast<__mmask8>(live & 0xFFU), lo, src, 4);
    g[t + 1] = _mm512_mask_i32gather_epi64(zero, static_cast<__mmask8>(live >> 8), hi, src, 4);
  }

  // The pairs split into the two corners' vectors and summed in ATen's corner order.
  MEDSEG_AVX512 static __m512 sum_pairs(const Lanes& L, const __m512i* g) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __m512 acc = _mm512_setzero_ps();
    for (int t = 0; t < 8; t += 2) {
      const __m512 a = _mm512_castsi512_ps(g[t]), b = _mm512_castsi512_ps(g[t + 1]);
      acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_permutex2var_ps(a, even, b), L.w[t]));
      acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_permutex2var_ps(a, odd, b), L.w[t + 1]));
    }
    return acc;
  }

  // N chunks of interior voxels together: all their gathers are issued before any result is used, so that many
  // reads are in flight (the gathers wait on the caches; measured at a 128^3 patch: 18.5 ms a sample one chunk at a
  // time, 14.5 four at a time).
  template <int N>
  MEDSEG_AVX512 void image_lanes_interior(const Lanes* L, int64_t o, __mmask16 live) const {
    for (int64_t c = 0; c < C; ++c) {
      const float* src = image + c * in_vol;
      __m512i g[N][8];
      for (int t = 0; t < 8; t += 2)  // corner row by corner row across the chunks, as measured fastest
        for (int h = 0; h < N; ++h) gather_pairs(L[h], src, t, live, g[h]);
      for (int h = 0; h < N; ++h)
        _mm512_mask_storeu_ps(out_image + c * out_vol + o + 16 * h, live, sum_pairs(L[h], g[h]));
    }
  }

  // The row's voxels from k0 on, N chunks at a time while N whole chunks remain; returns where it stopped.
  template <int N>
  MEDSEG_AVX512 int64_t row_chunks(const RowCoords& rc, int64_t o, int64_t k0, int64_t P2) const {
    for (; k0 + 16 * N <= P2; k0 += 16 * N) {
      Lanes L[N];
      bool all = true;
      for (int h = 0; h < N; ++h) {
        L[h] = lanes(rc, k0 + 16 * h, 0xFFFF);
        all = all && L[h].interior == 0xFFFF;
      }
      if (all) {
        image_lanes_interior<N>(L, o + k0, 0xFFFF);
      } else {
        for (int h = 0; h < N; ++h) image_lanes(L[h], o + k0 + 16 * h, 0xFFFF);
      }
      if (seg)
        for (int h = 0; h < N; ++h) label_lanes(L[h], o + k0 + 16 * h, 0xFFFF);
    }
    return k0;
  }

  // Some voxel near the crop's faces: each corner gathered alone, corners outside the crop left out of the sum.
  MEDSEG_AVX512 void image_lanes(const Lanes& L, int64_t o, __mmask16 live) const {
    if ((live & ~L.interior) == 0) {
      image_lanes_interior<1>(&L, o, live);
      return;
    }
    for (int64_t c = 0; c < C; ++c) {
      const float* src = image + c * in_vol;
      __m512 acc = _mm512_setzero_ps();
      for (int t = 0; t < 8; ++t) {
        const __m512i idx = _mm512_add_epi32(L.base, _mm512_set1_epi32(off[t]));
        const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), L.in[t], idx, src, 4);
        acc = _mm512_mask_add_ps(acc, L.in[t], acc, _mm512_mul_ps(v, L.w[t]));
      }
      _mm512_mask_storeu_ps(out_image + c * out_vol + o, live, acc);
    }
  }

  // Outside: -1. Interior voxels whose eight labels agree: that label. The rest: the portable kernel's vote.
  // The agreement test reads the corners with scalar loads, two labels (x0, x0 + 1) at a time: on Zen 4 a
  // gather costs about as much per element as the whole test does per voxel here.
  MEDSEG_AVX512 void label_lanes(const Lanes& L, int64_t o, __mmask16 live) const {
    const auto candidates = static_cast<unsigned>(L.interior & static_cast<__mmask16>(~L.outside));
    alignas(64) int32_t base[16];
    _mm512_store_si512(base, L.base);
    unsigned same = 0;
    for (int l = 0; l < 16; ++l) {
      if (!((candidates >> l) & 1U)) continue;
      const int16_t* p = seg + base[l];
      const uint32_t a = pair(p), b = pair(p + off[2]), c = pair(p + off[4]), d = pair(p + off[6]);
      const bool agree = a == b && a == c && a == d && (a >> 16) == (a & 0xFFFFU);
      out_seg[o + l] = static_cast<int16_t>(a & 0xFFFFU);
      same |= static_cast<unsigned>(agree) << l;
    }
    for (unsigned r = L.outside; r != 0; r &= r - 1) out_seg[o + __builtin_ctz(r)] = -1;
    const auto rest = static_cast<__mmask16>(live & ~L.outside & ~same);
    if (rest) vote_lanes(L, o, rest);
  }

  static uint32_t pair(const int16_t* p) {
    uint32_t v = 0;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  MEDSEG_AVX512 void vote_lanes(const Lanes& L, int64_t o, __mmask16 rest) const {
    alignas(64) int32_t base[16];
    alignas(64) float w[8][16];
    _mm512_store_si512(base, L.base);
    for (int t = 0; t < 8; ++t) _mm512_store_ps(w[t], L.w[t]);
    for (unsigned r = rest; r != 0; r &= r - 1) {
      const int l = __builtin_ctz(r);
      Vote<false> vote;
      for (int t = 0; t < 8; ++t)
        if ((L.in[t] >> l) & 1U) vote.add(seg[static_cast<int64_t>(base[l]) + off[t]], w[t][l]);
      out_seg[o + l] = vote.winner(lowest);
    }
  }

  MEDSEG_AVX512 void run() const {
    const Geometry geo = geometry(mp);
    const int64_t P1 = mp.patch[1], P2 = mp.patch[2];
    int64_t o = 0;
    for (int64_t i = 0; i < mp.patch[0]; ++i)
      for (int64_t j = 0; j < P1; ++j, o += P2) {
        const double pi = static_cast<double>(i) - geo.half[0], pj = static_cast<double>(j) - geo.half[1];
        RowCoords rc{{}, &geo, &mp};
        for (int r = 0; r < 3; ++r) rc.row[r] = 0.0 + mp.m[r][0] * pi + mp.m[r][1] * pj;
        int64_t k0 = row_chunks<2>(rc, o, row_chunks<4>(rc, o, 0, P2), P2);
        for (; k0 < P2; k0 += 16) {
          const auto live = static_cast<__mmask16>(P2 - k0 >= 16 ? 0xFFFFU : (1U << (P2 - k0)) - 1U);
          const Lanes L = lanes(rc, k0, live);
          image_lanes(L, o + k0, live);
          if (seg) label_lanes(L, o + k0, live);
        }
      }
  }
};

}  // namespace

bool resample_3d_avx512(const SpatialMap& mp, const float* image, int64_t C, const int16_t* seg, float* out_image,
                        int16_t* out_seg) {
  if (!cpu_features().avx512_core) return false;
  const int64_t H = mp.crop[1], W = mp.crop[2], in_vol = mp.crop[0] * H * W;
  // 32-bit gather indices, with room for corners one voxel beyond; the label reads take two labels at a time.
  if (in_vol < 2 || in_vol > (int64_t{1} << 30)) return false;
  const auto w = static_cast<int32_t>(W), hw = static_cast<int32_t>(H * W);
  const Kernel k{mp,
                 image,
                 C,
                 seg,
                 out_image,
                 out_seg,
                 in_vol,
                 mp.patch[0] * mp.patch[1] * mp.patch[2],
                 {0, 1, w, w + 1, hw, hw + 1, hw + w, hw + w + 1},
                 LowestLabel(seg, in_vol)};
  k.run();
  return true;
}

#else

bool resample_3d_avx512(const SpatialMap&, const float*, int64_t, const int16_t*, float*, int16_t*) { return false; }

#endif

}  // namespace medseg::data::augment::detail
