#include "io/nifti_header.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/error.h"

namespace medseg::io {
namespace {

template <class T>
T load(const unsigned char* p, bool swap) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, p, sizeof(T));
  if (swap) std::reverse(b, b + sizeof(T));
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

// Fills `out` with consecutive values of type T stored from byte `at` on.
template <class T, size_t N>
void load_array(const unsigned char* h, size_t at, bool swap, std::array<double, N>& out) {
  for (size_t i = 0; i < N; ++i) out[i] = static_cast<double>(load<T>(h + at + i * sizeof(T), swap));
}

// Byte offsets from the NIfTI-1 and NIfTI-2 standards (nifti1.h, nifti2.h).
void parse_v1(const unsigned char* h, bool s, NiftiHeader& r) {
  r.ndim = load<int16_t>(h + 40, s);
  for (int i = 1; i < 8; ++i) r.dim[i] = load<int16_t>(h + 40 + 2 * i, s);
  r.datatype = load<int16_t>(h + 70, s);
  r.bitpix = load<int16_t>(h + 72, s);
  load_array<float>(h, 76, s, r.pixdim);
  const float vox_offset = load<float>(h + 108, s);
  r.vox_offset =
      std::isfinite(vox_offset) && vox_offset > 0 && vox_offset < 1e18f ? static_cast<int64_t>(vox_offset) : 0;
  r.qform_code = load<int16_t>(h + 252, s);
  r.sform_code = load<int16_t>(h + 254, s);
  load_array<float>(h, 256, s, r.quatern);
  load_array<float>(h, 268, s, r.qoffset);
  load_array<float>(h, 280, s, r.srow);
}

void parse_v2(const unsigned char* h, bool s, NiftiHeader& r) {
  r.datatype = load<int16_t>(h + 12, s);
  r.bitpix = load<int16_t>(h + 14, s);
  r.ndim = load<int64_t>(h + 16, s);
  for (int i = 1; i < 8; ++i) r.dim[i] = load<int64_t>(h + 16 + 8 * i, s);
  load_array<double>(h, 104, s, r.pixdim);
  r.vox_offset = load<int64_t>(h + 168, s);
  r.qform_code = load<int32_t>(h + 344, s);
  r.sform_code = load<int32_t>(h + 348, s);
  load_array<double>(h, 352, s, r.quatern);
  load_array<double>(h, 376, s, r.qoffset);
  load_array<double>(h, 400, s, r.srow);
}

const char* const kAxis[] = {"x", "y", "z"};

// Geometry values (millimetres, or quaternion parts) larger than this describe no scanner. It
// is also far below where ITK's float SVD of the orientation overflows: a pixdim or sform entry
// near FLT_MAX made vnl_svd<float> loop forever (tests/fuzz/findings/image_read_itk_svd_hang.bin).
constexpr double kMaxGeometryValue = 1e9;

std::string beyond_limit(double x) {
  std::ostringstream o;
  o << x << " (beyond +-" << kMaxGeometryValue << ")";
  return o.str();
}

// "NaN" or "Inf" for the first non-finite value, the value itself for the first one too large
// to be geometry, "" when all are fine.
template <size_t N>
std::string bad_value(const std::array<double, N>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return std::isnan(x) ? "NaN" : "Inf";
  for (double x : v)
    if (std::abs(x) > kMaxGeometryValue) return beyond_limit(x);
  return "";
}

std::string spacing_problem(const NiftiHeader& h) {
  const int64_t axes = std::min<int64_t>(h.ndim, 3);
  for (int64_t i = 1; i <= axes; ++i) {
    const double d = h.pixdim[static_cast<size_t>(i)];
    if (std::isfinite(d) && d > 0 && d <= kMaxGeometryValue) continue;
    std::ostringstream o;
    o << "spacing ";
    if (d > kMaxGeometryValue && std::isfinite(d))
      o << beyond_limit(d);
    else if (std::isfinite(d))
      o << d;
    else
      o << (std::isnan(d) ? "NaN" : "Inf");
    o << " along " << kAxis[i - 1] << " (pixdim[" << i << "])";
    return o.str();
  }
  return "";
}

// The sform's axis columns must span the image's axes: a zero column or parallel columns give
// no direction matrix.
std::string sform_problem(const NiftiHeader& h) {
  auto col = [&](int j) { return std::array<double, 3>{h.srow[j], h.srow[4 + j], h.srow[8 + j]}; };
  auto norm = [](const std::array<double, 3>& a) { return std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); };
  auto cross = [](const std::array<double, 3>& a, const std::array<double, 3>& b) {
    return std::array<double, 3>{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
  };
  const int axes = h.ndim >= 3 ? 3 : 2;
  for (int j = 0; j < axes; ++j)
    if (norm(col(j)) == 0) return std::string("sform matrix is singular (its ") + kAxis[j] + " axis is zero)";
  const auto xy = cross(col(0), col(1));
  const double area = norm(xy), scale = norm(col(0)) * norm(col(1));
  double volume = 0, vscale = 1;
  if (axes == 3) {
    const auto z = col(2);
    volume = std::abs(xy[0] * z[0] + xy[1] * z[1] + xy[2] * z[2]);
    vscale = scale * norm(z);
  }
  if (area <= 1e-6 * scale || (axes == 3 && volume <= 1e-6 * vscale))
    return "sform matrix is singular (its axes are parallel)";
  return "";
}

}  // namespace

NiftiHeader parse_nifti_header(const std::string& path, const unsigned char* h, size_t n) {
  MEDSEG_CHECK_FILE(n >= 4, path, "truncated NIfTI header (", n, " bytes)");
  const int32_t raw = load<int32_t>(h, false);
  NiftiHeader r;
  r.swapped = raw != 348 && raw != 540;
  const int32_t size = r.swapped ? load<int32_t>(h, true) : raw;
  MEDSEG_CHECK_FILE(size == 348 || size == 540, path, "not a NIfTI file (bad header size field)");
  MEDSEG_CHECK_FILE(n >= static_cast<size_t>(size), path, "truncated NIfTI header (", n, " of ", size, " bytes)");
  r.version = size == 348 ? 1 : 2;
  if (r.version == 1)
    parse_v1(h, r.swapped, r);
  else
    parse_v2(h, r.swapped, r);
  return r;
}

std::string nifti_geometry_problem(const NiftiHeader& h) {
  if (h.sform_code > 0) {
    const std::string bad = bad_value(h.srow);
    if (!bad.empty()) return "sform matrix holds " + bad;
  }
  if (h.qform_code > 0) {
    std::string bad = bad_value(h.quatern);
    if (!bad.empty()) return "qform quaternion holds " + bad;
    bad = bad_value(h.qoffset);
    if (!bad.empty()) return "qform offset holds " + bad;
  }
  const std::string spacing = spacing_problem(h);
  if (!spacing.empty()) return spacing;
  return h.sform_code > 0 ? sform_problem(h) : "";
}

}  // namespace medseg::io
