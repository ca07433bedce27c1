#include "fingerprint/crop.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace medseg::fingerprint {

std::vector<uint8_t> nonzero_mask(const std::vector<Volume>& channels) {
  MEDSEG_CHECK(!channels.empty(), "crop_to_nonzero: no channels");
  const int64_t n = channels[0].numel();
  std::vector<uint8_t> mask(static_cast<std::size_t>(n), 0);
  for (const Volume& v : channels) {
    MEDSEG_CHECK(v.shape() == channels[0].shape(), "crop_to_nonzero: channel shapes differ (", shape_str(v.shape()),
                 " vs ", shape_str(channels[0].shape()), ")");
    visit_pixels(v, [&](const auto* p) {
      for (int64_t i = 0; i < n; ++i) mask[i] |= static_cast<uint8_t>(!(p[i] == 0));
    });
  }
  return mask;
}

namespace {

// Scanline flood fill: marks as kOutside the face-connected background (0) region containing
// `seed`. Each popped seed is widened to its whole run along x; the four neighbouring rows of the
// run (y +- 1, z +- 1) then get one seed per run of unvisited background. Memory is one index per
// pending run, far below one per voxel.
constexpr uint8_t kOutside = 2;

void flood_outside(std::vector<uint8_t>& m, const Shape3& shape, int64_t seed, std::vector<int64_t>& stack) {
  const int64_t Z = shape[0], Y = shape[1], X = shape[2];
  stack.clear();
  stack.push_back(seed);
  while (!stack.empty()) {
    const int64_t i = stack.back();
    stack.pop_back();
    if (m[i] != 0) continue;
    const int64_t row = i - i % X, zy = row / X, z = zy / Y, y = zy % Y;
    int64_t lo = i - row, hi = lo;
    while (lo > 0 && m[row + lo - 1] == 0) --lo;
    while (hi < X - 1 && m[row + hi + 1] == 0) ++hi;
    std::fill(m.begin() + row + lo, m.begin() + row + hi + 1, kOutside);
    auto scan = [&](int64_t other_row) {
      bool in_run = false;
      for (int64_t x = lo; x <= hi; ++x) {
        const bool open = m[other_row + x] == 0;
        if (open && !in_run) stack.push_back(other_row + x);
        in_run = open;
      }
    };
    if (y > 0) scan(row - X);
    if (y < Y - 1) scan(row + X);
    if (z > 0) scan(row - X * Y);
    if (z < Z - 1) scan(row + X * Y);
  }
}

}  // namespace

void fill_holes(std::vector<uint8_t>& mask, const Shape3& shape) {
  const int64_t Z = shape[0], Y = shape[1], X = shape[2];
  MEDSEG_CHECK(static_cast<int64_t>(mask.size()) == Z * Y * X, "fill_holes: mask size does not match shape");
  std::vector<int64_t> stack;
  auto seed = [&](int64_t i) {
    if (mask[i] == 0) flood_outside(mask, shape, i, stack);
  };
  for (int64_t z = 0; z < Z; ++z)
    for (int64_t y = 0; y < Y; ++y) {
      const int64_t row = (z * Y + y) * X;
      if (z == 0 || z == Z - 1 || y == 0 || y == Y - 1) {
        for (int64_t x = 0; x < X; ++x) seed(row + x);
      } else if (X > 0) {
        seed(row);
        seed(row + X - 1);
      }
    }
  for (auto& m : mask) m = m == kOutside ? 0 : 1;
}

Box bbox_of_mask(const std::vector<uint8_t>& mask, const Shape3& shape) {
  const int64_t Z = shape[0], Y = shape[1], X = shape[2];
  Box b;
  b.lo = {Z, Y, X};
  b.hi = {0, 0, 0};
  bool any = false;
  for (int64_t z = 0; z < Z; ++z)
    for (int64_t y = 0; y < Y; ++y) {
      const uint8_t* row = mask.data() + (z * Y + y) * X;
      int64_t first = -1, last = -1;
      for (int64_t x = 0; x < X; ++x)
        if (row[x]) {
          if (first < 0) first = x;
          last = x;
        }
      if (first < 0) continue;
      any = true;
      b.lo = {std::min(b.lo[0], z), std::min(b.lo[1], y), std::min(b.lo[2], first)};
      b.hi = {std::max(b.hi[0], z + 1), std::max(b.hi[1], y + 1), std::max(b.hi[2], last + 1)};
    }
  if (!any) {
    b.lo = {0, 0, 0};
    b.hi = shape;
  }
  return b;
}

double CropResult::relative_size() const {
  const double before = static_cast<double>(shape_before[0]) * shape_before[1] * shape_before[2];
  return before > 0 ? static_cast<double>(bbox.numel()) / before : 0.0;
}

Geometry cropped_geometry(const Geometry& g, const Shape3& lo) {
  Geometry out = g;
  const double step[3] = {g.spacing[0] * lo[2], g.spacing[1] * lo[1], g.spacing[2] * lo[0]};  // x, y, z
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) out.origin[r] += g.direction[r * 3 + c] * step[c];
  return out;
}

Volume crop_volume(const Volume& v, const Box& b) {
  for (int a = 0; a < 3; ++a)
    MEDSEG_CHECK(b.lo[a] >= 0 && b.hi[a] <= v.shape()[a] && b.lo[a] <= b.hi[a],
                 "crop: box does not fit the volume of shape ", shape_str(v.shape()));
  Volume out(v.pixel_type(), b.shape(), cropped_geometry(v.geometry(), b.lo));
  visit_pixels(v, [&](const auto* p) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
    crop_array<T>(p, v.shape(), b, out.data<T>());
  });
  return out;
}

Volume uncrop(const Volume& cropped, const Box& b, const Shape3& full_shape, const Geometry& full_geometry,
              double fill) {
  for (int a = 0; a < 3; ++a)
    MEDSEG_CHECK(b.lo[a] >= 0 && b.hi[a] <= full_shape[a] && b.shape()[a] == cropped.shape()[a],
                 "uncrop: box does not match the cropped shape ", shape_str(cropped.shape()), " or the full shape ",
                 shape_str(full_shape));
  Volume out(cropped.pixel_type(), full_shape, full_geometry);
  visit_pixels(out, [&](auto* dst) {
    using T = std::remove_pointer_t<decltype(dst)>;
    std::fill(dst, dst + out.numel(), static_cast<T>(fill));
    uncrop_array<T>(cropped.data<T>(), b, full_shape, dst);
  });
  return out;
}

namespace {

// A signed type that can hold the label's values and -1.
PixelType signed_label_type(PixelType t) {
  switch (t) {
    case PixelType::Int8:
    case PixelType::Int16:
    case PixelType::Int32:
    case PixelType::Int64: return t;
    case PixelType::UInt8: return PixelType::Int16;
    default: return PixelType::Int32;
  }
}

template <class T>
void mark_outside(T* seg, const std::vector<uint8_t>& mask) {
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (seg[i] == 0 && !mask[i]) seg[i] = static_cast<T>(-1);
}

}  // namespace

CropResult crop_to_nonzero(const std::vector<Volume>& channels, const Volume* seg) {
  CropResult r;
  std::vector<uint8_t> full = nonzero_mask(channels);
  r.shape_before = channels[0].shape();
  fill_holes(full, r.shape_before);
  r.bbox = bbox_of_mask(full, r.shape_before);
  r.mask.resize(static_cast<std::size_t>(r.bbox.numel()));
  crop_array<uint8_t>(full.data(), r.shape_before, r.bbox, r.mask.data());
  full = {};
  for (const Volume& v : channels) r.channels.push_back(crop_volume(v, r.bbox));

  const Geometry g = cropped_geometry(channels[0].geometry(), r.bbox.lo);
  if (seg && seg->numel() > 0) {
    MEDSEG_CHECK(seg->shape() == r.shape_before, "crop_to_nonzero: label shape ", shape_str(seg->shape()),
                 " differs from image shape ", shape_str(r.shape_before));
    Volume s = crop_volume(*seg, r.bbox);
    const PixelType t = signed_label_type(s.pixel_type());
    if (t != s.pixel_type()) s = Volume::from_values(t, s.shape(), s.geometry(), s.to_double());
    visit_pixels(s, [&](auto* p) { mark_outside(p, r.mask); });
    r.seg = std::move(s);
  } else {
    r.seg = Volume(PixelType::Int8, r.bbox.shape(), g);
    int8_t* p = r.seg.data<int8_t>();
    for (std::size_t i = 0; i < r.mask.size(); ++i) p[i] = r.mask[i] ? 0 : -1;
  }
  return r;
}

}  // namespace medseg::fingerprint
