// copy_box (data/crop.h) against reading each voxel of the box on its own, for boxes inside the case, across each
// face and wholly outside it, with and without a conversion (int8 labels to int16); and channel_stats
// (data/augment/stats.h) against sums in long double on sizes around its 16 lanes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/volume.h"
#include "data/augment/stats.h"
#include "data/crop.h"

using namespace medseg;
using namespace medseg::data;

namespace {

template <class Src, class Dst>
std::vector<Dst> box_voxel_by_voxel(const std::vector<Src>& src, int64_t C, const Shape3& shape, const Box& box,
                                    Dst pad) {
  std::vector<Dst> out;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t z = box.lo[0]; z < box.hi[0]; ++z)
      for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
        for (int64_t x = box.lo[2]; x < box.hi[2]; ++x) {
          const bool in = z >= 0 && z < shape[0] && y >= 0 && y < shape[1] && x >= 0 && x < shape[2];
          out.push_back(
              in ? static_cast<Dst>(src[static_cast<size_t>(((c * shape[0] + z) * shape[1] + y) * shape[2] + x)])
                 : pad);
        }
  return out;
}

}  // namespace

TEST(DataCopyBox, EqualsReadingEachVoxelInsideAcrossEveryFaceAndOutside) {
  const Shape3 shape{5, 7, 9};
  const int64_t C = 2, n = C * shape[0] * shape[1] * shape[2];
  std::vector<float> image(static_cast<size_t>(n));
  std::vector<int8_t> labels(static_cast<size_t>(n / C));
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(i) + 0.5f;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int8_t>(i % 5);
  const Box boxes[] = {{{1, 2, 3}, {4, 6, 8}},      {{-2, 0, 0}, {3, 7, 9}}, {{3, -3, 0}, {7, 4, 9}},
                       {{0, 0, -4}, {5, 7, 2}},     {{0, 0, 6}, {5, 7, 13}}, {{-1, -2, -3}, {6, 9, 12}},
                       {{6, 0, 0}, {8, 3, 3}},      {{0, 8, 0}, {2, 10, 4}}, {{0, 0, -5}, {1, 1, -1}},
                       {{-3, -3, -3}, {-1, 20, 20}}};
  for (const Box& box : boxes) {
    const std::string what = "box " + shape_str(box.lo) + " - " + shape_str(box.hi);
    std::vector<float> got(static_cast<size_t>(C * box.numel()), -7.f);
    copy_box(image.data(), C, shape, box, got.data(), -1.5f);
    EXPECT_EQ(got, box_voxel_by_voxel(image, C, shape, box, -1.5f)) << what;
    std::vector<int16_t> seg(static_cast<size_t>(box.numel()), 99);
    copy_box(labels.data(), 1, shape, box, seg.data(), int16_t{-1});
    EXPECT_EQ(seg, box_voxel_by_voxel(labels, 1, shape, box, int16_t{-1})) << what;
  }
}

TEST(DataChannelStats, MatchSumsInLongDoubleAroundTheSixteenLanes) {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(3.f, 2.f);
  for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 1000, 100003}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(gen);
    long double sum = 0, sq = 0;
    float lo = x[0], hi = x[0];
    for (float v : x) {
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const long double mean = sum / n;
    for (float v : x) sq += (v - mean) * (v - mean);
    const augment::ChannelStats s = augment::channel_stats(x.data(), n, true);
    EXPECT_EQ(s.min, lo) << n;
    EXPECT_EQ(s.max, hi) << n;
    EXPECT_NEAR(s.mean, static_cast<double>(mean), 1e-12 * (1 + std::fabs(static_cast<double>(mean)))) << n;
    const double sd = n > 1 ? static_cast<double>(std::sqrt(sq / (n - 1))) : 0.0;
    EXPECT_NEAR(s.std, sd, 1e-12 * (1 + sd)) << n;
    EXPECT_EQ(augment::channel_stats(x.data(), n, false).std, 0.0) << n;
  }
  EXPECT_EQ(augment::channel_stats(nullptr, 0, true).mean, 0.0);
}
