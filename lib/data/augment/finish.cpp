#include "data/augment/finish.h"

#include <ATen/ATen.h>

#include <array>
#include <cstring>
#include <string>

#include "core/error.h"

namespace medseg::data::augment {

namespace {

// Copies one row, reversed when x is mirrored.
template <class T>
void copy_row(const T* src, T* dst, int64_t n, bool flip) {
  if (!flip) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  for (int64_t x = 0; x < n; ++x) dst[x] = src[n - 1 - x];
}

// Which of the three axes are flipped.
std::array<bool, 3> flipped_axes(const std::vector<int64_t>& mirror_axes) {
  std::array<bool, 3> flip{false, false, false};
  for (int64_t a : mirror_axes) {
    MEDSEG_CHECK(a >= 0 && a <= 2, "finish_sample: mirror axis ", a);
    flip[static_cast<size_t>(a)] = true;
  }
  return flip;
}

// Per channel of C: whether it is masked (zero where the segmentation is -1, outside the nonzero mask).
std::vector<char> masked_flags(const std::vector<int>& mask_channels, int64_t C) {
  std::vector<char> masked(static_cast<size_t>(C), 0);
  for (int c : mask_channels)
    if (c >= 0 && c < C) masked[static_cast<size_t>(c)] = 1;
  return masked;
}

}  // namespace

void finish_sample(const Sample& s, const std::vector<int64_t>& mirror_axes, const std::vector<int>& mask_channels,
                   float* data_out, int16_t* seg_out) {
  const at::Tensor data = s.data.contiguous(), seg = s.seg.contiguous();
  const int64_t C = data.size(0), Z = data.size(1), Y = data.size(2), X = data.size(3);
  MEDSEG_CHECK(seg.numel() == Z * Y * X, "finish_sample: segmentation and image shapes differ");
  const std::array<bool, 3> flip = flipped_axes(mirror_axes);
  const std::vector<char> masked = masked_flags(mask_channels, C);
  const float* din = data.data_ptr<float>();
  const int16_t* sin = seg.data_ptr<int16_t>();
  const int64_t vol = Z * Y * X;
  for (int64_t z = 0; z < Z; ++z)
    for (int64_t y = 0; y < Y; ++y) {
      const int64_t src_row = ((flip[0] ? Z - 1 - z : z) * Y + (flip[1] ? Y - 1 - y : y)) * X;
      const int64_t dst_row = (z * Y + y) * X;
      int16_t* so = seg_out + dst_row;
      copy_row(sin + src_row, so, X, flip[2]);
      for (int64_t c = 0; c < C; ++c) {
        float* dout = data_out + c * vol + dst_row;
        copy_row(din + c * vol + src_row, dout, X, flip[2]);
        if (masked[static_cast<size_t>(c)])
          for (int64_t x = 0; x < X; ++x)
            if (so[x] < 0) dout[x] = 0.f;
      }
      for (int64_t x = 0; x < X; ++x) so[x] = so[x] == -1 ? int16_t{0} : so[x];
    }
}

}  // namespace medseg::data::augment
