// scipy's linear zoom of one-hot label masks, and the label argmax on it, against values that
// skimage 0.26 / scipy 1.17 and batchgenerators 0.25.5 (nnU-Net 2.8.1's) printed for the same inputs:
//   resize((seg == 0).astype(float), out, 1, mode='edge', clip=True, anti_aliasing=False)  (float.hex)
//   resize_segmentation(seg, out, 1)
// Both inputs hold a near tie: at one voxel the two labels score 0.5000000000000001 and
// 0.4999999999999999, equal once rounded to float, and the nearest-neighbour label is the one that
// scores less. In float the tie-break hands the voxel to the wrong label; nnU-Net's float64 does not tie.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "preprocessing/resampling.h"
#include "preprocessing/zoom_linear.h"

using namespace medseg;
using namespace medseg::preprocessing;

namespace {

struct NearTie {
  Shape3 in, out;
  std::string seg, expected;              // label per voxel, C order
  std::vector<double> first_zero_scores;  // the first 12 values of the resized (seg == 0) mask
};

const NearTie kCases[] = {
    {{2, 2, 6},
     {5, 6, 3},
     "000011001111110011110111",
     "001001001011011011001001001011011011101101101101111111101101101101111111101101101101111111",
     {0x1p+0, 0x1p+0, 0x0p+0, 0x1p+0, 0x1p+0, 0x0p+0, 0x1p+0, 0x1.5555555555556p-1, 0x0p+0, 0x1p+0,
      0x1.5555555555558p-2, 0x0p+0}},
    {{4, 2, 6},
     {1, 6, 4},
     "000010101101011110010010011110110000111010001001",
     "011001100110010010001000",
     {0x1.8p-1, 0x0p+0, 0x0p+0, 0x1.8p-1, 0x1.8p-1, 0x0p+0, 0x0p+0, 0x1.8p-1, 0x1.4p-1, 0x1.ffffffffffffep-3,
      0x1.2aaaaaaaaaaaap-2, 0x1.9555555555555p-1}},
};

std::vector<int16_t> labels_of(const std::string& s) {
  std::vector<int16_t> v;
  for (char c : s) v.push_back(static_cast<int16_t>(c - '0'));
  return v;
}

int64_t zoom_numel(const Shape3& s) { return s[0] * s[1] * s[2]; }

}  // namespace

TEST(PreprocessingZoomLinear, ScoresAreScipysBitForBit) {
  for (const NearTie& k : kCases) {
    std::vector<double> mask;
    for (char c : k.seg) mask.push_back(c == '0' ? 1.0 : 0.0);
    std::vector<double> out(static_cast<std::size_t>(zoom_numel(k.out)));
    zoom_linear(mask.data(), k.in, out.data(), k.out);
    for (std::size_t i = 0; i < k.first_zero_scores.size(); ++i)
      EXPECT_EQ(out[i], k.first_zero_scores[i]) << "voxel " << i << ": " << std::hexfloat << out[i];
  }
}

TEST(PreprocessingZoomLinear, NearTiesGoToTheLargerFloat64Score) {
  for (const NearTie& k : kCases) {
    const auto out = resample_seg(labels_of(k.seg), k.in, k.out, {}, {1, 0});
    EXPECT_EQ(out, labels_of(k.expected));
  }
}

// A stack of slices along `axis` zooms each slice on its own: the same values as zooming that 2D slice as
// a volume of one slice, and each clipped to its own slice's range.
TEST(PreprocessingZoomLinear, SlicesAreZoomedAndClippedOneByOne) {
  const Shape3 in{3, 4, 5};
  std::vector<double> v(static_cast<std::size_t>(zoom_numel(in)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7 * static_cast<double>(i)) * (1 + i / 20);
  for (int axis = 0; axis < 3; ++axis) {
    Shape3 out{7, 6, 2};
    out[axis] = in[axis];
    std::vector<double> stacked(static_cast<std::size_t>(zoom_numel(out)));
    zoom_linear(v.data(), in, stacked.data(), out, axis);
    for (int64_t k = 0; k < in[axis]; ++k) {
      Shape3 in1 = in, out1 = out;
      in1[axis] = out1[axis] = 1;
      std::vector<double> slice, zoomed(static_cast<std::size_t>(zoom_numel(out1)));
      for (int64_t z = 0; z < in[0]; ++z)
        for (int64_t y = 0; y < in[1]; ++y)
          for (int64_t x = 0; x < in[2]; ++x)
            if ((axis == 0 ? z : axis == 1 ? y : x) == k) slice.push_back(v[(z * in[1] + y) * in[2] + x]);
      zoom_linear(slice.data(), in1, zoomed.data(), out1);
      std::size_t j = 0;
      for (int64_t z = 0; z < out[0]; ++z)
        for (int64_t y = 0; y < out[1]; ++y)
          for (int64_t x = 0; x < out[2]; ++x)
            if ((axis == 0 ? z : axis == 1 ? y : x) == k) {
              ASSERT_EQ(stacked[(z * out[1] + y) * out[2] + x], zoomed[j++]) << "axis " << axis << " slice " << k;
            }
    }
  }
}

TEST(PreprocessingZoomLinear, RefusesAnEmptyShapeOrAResizedSliceAxis) {
  std::vector<double> v(8, 1.0), o(8);
  EXPECT_THROW(zoom_linear(v.data(), {2, 2, 2}, o.data(), {0, 2, 2}), std::exception);
  EXPECT_THROW(zoom_linear(v.data(), {2, 2, 2}, o.data(), {1, 2, 2}, 0), std::exception);
}
