#include "data/augment/morphology.h"

#include <limits>

#include "core/error.h"

namespace medseg::data::augment {

namespace {

// Far enough that no real distance comes near it, small enough that parabola intersections with
// it stay far outside any array (so it never wins over a real voxel).
constexpr double kFar = 1e20;

// One line of the 1-D transform d(p) = min_q (p - q)^2 + f(q), in place: the lower envelope of the
// parabolas rooted at every q (Felzenszwalb & Huttenlocher 2012, algorithm 1).
void distance_line(double* f, int64_t n, int64_t stride, std::vector<double>& d, std::vector<int64_t>& v,
                   std::vector<double>& z) {
  d.resize(static_cast<size_t>(n));
  v.assign(static_cast<size_t>(n), 0);
  z.assign(static_cast<size_t>(n) + 1, 0.0);
  auto at = [&](int64_t q) { return f[q * stride]; };
  auto cross = [&](int64_t q, int64_t p) {
    return ((at(q) + double(q) * double(q)) - (at(p) + double(p) * double(p))) / (2.0 * double(q - p));
  };
  size_t k = 0;
  z[0] = -std::numeric_limits<double>::infinity();
  z[1] = std::numeric_limits<double>::infinity();
  for (int64_t q = 1; q < n; ++q) {
    double s = cross(q, v[k]);
    while (s <= z[k]) {
      --k;
      s = cross(q, v[k]);
    }
    ++k;
    v[k] = q;
    z[k] = s;
    z[k + 1] = std::numeric_limits<double>::infinity();
  }
  k = 0;
  for (int64_t q = 0; q < n; ++q) {
    while (z[k + 1] < double(q)) ++k;
    const int64_t p = v[k];
    d[static_cast<size_t>(q)] = double(q - p) * double(q - p) + at(p);
  }
  for (int64_t q = 0; q < n; ++q) f[q * stride] = d[static_cast<size_t>(q)];
}

std::vector<uint8_t> dilate(const std::vector<uint8_t>& m, const Shape3& s, double r2) {
  const std::vector<double> d = squared_distance_to(m, s);
  std::vector<uint8_t> out(m.size());
  for (size_t i = 0; i < m.size(); ++i) out[i] = d[i] <= r2 ? 1 : 0;
  return out;
}

std::vector<uint8_t> erode(const std::vector<uint8_t>& m, const Shape3& s, double r2) {
  std::vector<uint8_t> background(m.size());
  for (size_t i = 0; i < m.size(); ++i) background[i] = m[i] ? 0 : 1;
  const std::vector<double> d = squared_distance_to(background, s);
  std::vector<uint8_t> out(m.size());
  for (size_t i = 0; i < m.size(); ++i) out[i] = m[i] && d[i] > r2 ? 1 : 0;
  return out;
}

}  // namespace

std::vector<double> squared_distance_to(const std::vector<uint8_t>& mask, const Shape3& shape) {
  const int64_t Z = shape[0], Y = shape[1], X = shape[2];
  MEDSEG_CHECK(static_cast<int64_t>(mask.size()) == Z * Y * X, "squared_distance_to: mask size differs from shape");
  std::vector<double> f(mask.size());
  for (size_t i = 0; i < mask.size(); ++i) f[i] = mask[i] ? 0.0 : kFar;
  std::vector<double> d, z;
  std::vector<int64_t> v;
  for (int64_t a = 0; a < Z; ++a)
    for (int64_t b = 0; b < Y; ++b) distance_line(f.data() + (a * Y + b) * X, X, 1, d, v, z);
  for (int64_t a = 0; a < Z; ++a)
    for (int64_t c = 0; c < X; ++c) distance_line(f.data() + a * Y * X + c, Y, X, d, v, z);
  if (Z > 1)
    for (int64_t b = 0; b < Y; ++b)
      for (int64_t c = 0; c < X; ++c) distance_line(f.data() + b * X + c, Z, Y * X, d, v, z);
  return f;
}

std::vector<uint8_t> binary_operation(const std::vector<uint8_t>& mask, const Shape3& shape, BinaryOp op,
                                      double radius) {
  MEDSEG_CHECK(radius > 0, "binary_operation: radius must be > 0");
  const double r2 = radius * radius;
  switch (op) {
    case BinaryOp::Dilation: return dilate(mask, shape, r2);
    case BinaryOp::Erosion: return erode(mask, shape, r2);
    case BinaryOp::Closing: return erode(dilate(mask, shape, r2), shape, r2);
    case BinaryOp::Opening: return dilate(erode(mask, shape, r2), shape, r2);
  }
  throw Error("binary_operation: unknown operation");
}

}  // namespace medseg::data::augment
