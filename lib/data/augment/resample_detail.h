#pragma once
// Internal to the resampler (resample.cpp, resample_avx512.cpp): the pieces both kernels share so that their
// arithmetic is one definition. Both files are built with -ffp-contract=off (lib/CMakeLists.txt).
#include <c10/util/Half.h>

#include <array>
#include <cmath>
#include <cstdint>

#include "data/augment/resample.h"

namespace medseg::data::augment::detail {

inline constexpr auto kOneHot = static_cast<float>(kOneHotScale);

// grid_sample's normalised coordinate (align_corners=False) of crop position `pos`.
inline float normalised(double pos, int64_t crop) {
  return static_cast<float>((2.0 * pos + 1.0) / static_cast<double>(crop) - 1.0);
}
// ATen's un-normalisation: the scalar 3D kernel, and the vectorised 2D kernel (fused).
inline float unnormalise_3d(float g, int64_t size) { return ((g + 1.f) * static_cast<float>(size) - 1.f) / 2.f; }
inline float unnormalise_2d(float g, int64_t size) { return std::fma(g + 1.f, static_cast<float>(size) / 2, -0.5f); }

// Per-label sums of the one-hot channels at one output voxel, in neighbour order.
template <bool kFused>
struct Vote {
  int16_t label[8];
  float value[8];
  int n = 0;
  void add(int16_t l, float w) {
    int i = 0;
    while (i < n && label[i] != l) ++i;
    if (i == n) {
      label[n] = l;
      value[n++] = 0.f;
    }
    value[i] = kFused ? std::fma(kOneHot, w, value[i]) : value[i] + kOneHot * w;
  }
  // Largest float16-rounded value, lowest label on ties; labels no neighbour carries score 0, so
  // when nothing scores above 0 the lowest label present in the crop wins.
  template <class Lowest>
  int16_t winner(Lowest& lowest_present) const {
    float best = 0.f;
    int16_t win = 0;
    bool scored = false;
    for (int i = 0; i < n; ++i) {
      const float v = static_cast<float>(c10::Half(value[i]));
      if (v > best || (v == best && v > 0.f && label[i] < win)) {
        best = v;
        win = label[i];
        scored = true;
      }
    }
    return scored ? win : lowest_present.get();
  }
};

struct Geometry {
  std::array<double, 3> centre{};  // loader-patch centre in crop indices, per mapped row r
  std::array<double, 3> limit{};   // |q| beyond this: outside the loader patch's outer voxel centres
  std::array<double, 3> half{};    // (patch - 1) / 2 per array axis
};

inline Geometry geometry(const SpatialMap& mp) {
  Geometry g;
  const int first = 3 - mp.ndim;
  for (int d = 0; d < 3; ++d) g.half[d] = static_cast<double>(mp.patch[d] - 1) / 2.0;
  for (int r = 0; r < mp.ndim; ++r) {
    const int ax = first + r;
    g.centre[r] = static_cast<double>(mp.loader[ax] - 1) / 2.0 - static_cast<double>(mp.lo[ax]);
    g.limit[r] = static_cast<double>(mp.loader[ax] - 1) / 2.0 + kOutsideTolerance;
  }
  return g;
}

// The lowest label present in the crop, which a vote that nothing scored returns: found on first need. It is a
// pass over the whole crop (about 2.3x the output at a rotated 128^3 patch) that most samples never need.
class LowestLabel {
 public:
  LowestLabel(const int16_t* seg, int64_t n) : seg_(seg), n_(n) {}
  int16_t get() {
    if (!known_) {
      // A plain loop, not std::min_element: the compiler vectorises it.
      value_ = n_ == 0 ? int16_t{0} : seg_[0];
      for (int64_t i = 1; i < n_; ++i) value_ = seg_[i] < value_ ? seg_[i] : value_;
      known_ = true;
    }
    return value_;
  }

 private:
  const int16_t* seg_;
  int64_t n_;
  int16_t value_ = 0;
  bool known_ = false;
};

// The AVX-512 kernel of resample_3d (resample_avx512.cpp): false, having written nothing, where the processor
// lacks AVX-512 F/BW/DQ/VL or the crop is too large for 32-bit gather indices; the caller then runs the portable one.
bool resample_3d_avx512(const SpatialMap& mp, const float* image, int64_t C, const int16_t* seg, float* out_image,
                        int16_t* out_seg);

}  // namespace medseg::data::augment::detail
