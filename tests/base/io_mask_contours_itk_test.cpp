// Outlines of 2D masks (io/mask_contours.h) against facts about marching squares at level 0.5: a lone pixel
// is the diamond through its four edge midpoints, a ring is two outlines, and filling every outline with
// the even-odd rule at pixel centres (a point-in-polygon test written here) gives back any mask, edges
// and diagonal neighbours included.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "io/mask_contours.h"

using namespace medseg;

namespace {

std::vector<uint8_t> fill(const std::vector<io::Contour>& contours, int rows, int cols) {
  std::vector<uint8_t> out(static_cast<std::size_t>(rows * cols), 0);
  for (const io::Contour& c : contours)
    for (int r = 0; r < rows; ++r)
      for (int x = 0; x < cols; ++x) {
        bool in = false;
        for (std::size_t i = 0, j = c.size() - 1; i < c.size(); j = i++) {
          const double x0 = c[i][0], y0 = c[i][1], x1 = c[j][0], y1 = c[j][1];
          if ((y0 > r) != (y1 > r) && x < x0 + (r - y0) * (x1 - x0) / (y1 - y0)) in = !in;
        }
        out[static_cast<std::size_t>(r * cols + x)] ^= static_cast<uint8_t>(in);
      }
  return out;
}

}  // namespace

TEST(MaskContours, ALonePixelIsTheDiamondThroughItsEdgeMidpoints) {
  std::vector<uint8_t> m(5 * 6, 0);
  m[2 * 6 + 3] = 1;
  const auto c = io::mask_contours(m.data(), 5, 6);
  ASSERT_EQ(c.size(), 1u);
  std::set<std::pair<double, double>> got, want{{2.5, 2}, {3.5, 2}, {3, 1.5}, {3, 2.5}};
  for (const auto& v : c[0]) got.insert({v[0], v[1]});
  EXPECT_EQ(got, want);
}

TEST(MaskContours, ARingHasAnOuterAndAnInnerOutline) {
  const int n = 7;
  std::vector<uint8_t> m(n * n, 0);
  for (int r = 1; r < 6; ++r)
    for (int c = 1; c < 6; ++c) m[static_cast<std::size_t>(r * n + c)] = !(r == 3 && c == 3);
  const auto contours = io::mask_contours(m.data(), n, n);
  EXPECT_EQ(contours.size(), 2u);
  EXPECT_EQ(fill(contours, n, n), m);
}

TEST(MaskContours, EvenOddFillingGivesTheMaskBack) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const int rows = 3 + trial % 9, cols = 4 + trial % 7;
    std::vector<uint8_t> m(static_cast<std::size_t>(rows * cols));
    for (auto& v : m) v = static_cast<uint8_t>(rng() % 3 == 0);  // edges, diagonals and holes all occur
    EXPECT_EQ(fill(io::mask_contours(m.data(), rows, cols), rows, cols), m) << "trial " << trial;
  }
  std::vector<uint8_t> full(12, 1);  // a mask that touches every edge
  EXPECT_EQ(fill(io::mask_contours(full.data(), 3, 4), 3, 4), full);
}
