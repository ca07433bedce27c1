#include "io/reorient.h"

#include <cmath>
#include <cstring>

#include "core/error.h"

namespace medseg::io {
namespace {

// Index-axis sizes (x, y, z) of an array-order (z, y, x) shape, and back.
std::array<int64_t, 3> index_sizes(const std::array<int64_t, 3>& zyx) { return {zyx[2], zyx[1], zyx[0]}; }
std::array<int64_t, 3> array_shape(const std::array<int64_t, 3>& xyz) { return {xyz[2], xyz[1], xyz[0]}; }

// Copies `src` (array shape `shape_zyx`, elements of `elem` bytes) into `dst` with index axis i moved to
// r.world_axis[i] and reversed where r.flip[i]. Returns the new array shape.
std::array<int64_t, 3> permute(const unsigned char* src, unsigned char* dst, const std::array<int64_t, 3>& shape_zyx,
                               const Reorientation& r, std::size_t elem) {
  const auto n = index_sizes(shape_zyx);
  const std::array<int64_t, 3> stride{1, n[0], n[0] * n[1]};  // of the source, per index axis
  std::array<int64_t, 3> new_n{}, step{};
  int64_t base = 0;
  for (int i = 0; i < 3; ++i) {
    const int k = r.world_axis[static_cast<std::size_t>(i)];
    new_n[static_cast<std::size_t>(k)] = n[static_cast<std::size_t>(i)];
    step[static_cast<std::size_t>(k)] = r.flip[static_cast<std::size_t>(i)] ? -stride[static_cast<std::size_t>(i)]
                                                                            : stride[static_cast<std::size_t>(i)];
    if (r.flip[static_cast<std::size_t>(i)])
      base += (n[static_cast<std::size_t>(i)] - 1) * stride[static_cast<std::size_t>(i)];
  }
  unsigned char* out = dst;
  for (int64_t z = 0; z < new_n[2]; ++z)
    for (int64_t y = 0; y < new_n[1]; ++y) {
      const int64_t row = base + z * step[2] + y * step[1];
      for (int64_t x = 0; x < new_n[0]; ++x, out += elem)
        std::memcpy(out, src + static_cast<std::size_t>(row + x * step[0]) * elem, elem);
    }
  return array_shape(new_n);
}

Reorientation inverse(const Reorientation& r) {
  Reorientation inv;
  for (int i = 0; i < 3; ++i) {
    const auto k = static_cast<std::size_t>(r.world_axis[static_cast<std::size_t>(i)]);
    inv.world_axis[k] = i;
    inv.flip[k] = r.flip[static_cast<std::size_t>(i)];
  }
  return inv;
}

void check(const Reorientation& r, const std::string& where) {
  std::array<bool, 3> seen{false, false, false};
  for (int a : r.world_axis) {
    MEDSEG_CHECK(a >= 0 && a <= 2 && !seen[static_cast<std::size_t>(a)], where,
                 ": reorientation axes must be a permutation of 0, 1, 2");
    seen[static_cast<std::size_t>(a)] = true;
  }
}

}  // namespace

bool Reorientation::identity() const {
  return world_axis == std::array<int, 3>{0, 1, 2} && flip == std::array<bool, 3>{false, false, false};
}

Reorientation ras_reorientation(const Geometry& g) {
  // nibabel's affine in RAS: ITK's LPS direction with x and y negated. Columns are index axes.
  double m[3][3];
  for (int row = 0; row < 3; ++row)
    for (int col = 0; col < 3; ++col)
      m[row][col] = (row < 2 ? -1.0 : 1.0) * g.direction[static_cast<std::size_t>(row * 3 + col)];
  Reorientation r;
  for (int col = 0; col < 3; ++col) {
    int best = 0;
    for (int row = 1; row < 3; ++row)
      if (std::fabs(m[row][col]) > std::fabs(m[best][col])) best = row;  // first maximum, as np.argmax
    MEDSEG_CHECK(m[best][col] != 0, "reorientation: the direction matrix has a zero column");
    r.world_axis[static_cast<std::size_t>(col)] = best;
    r.flip[static_cast<std::size_t>(col)] = m[best][col] < 0;
    for (double& v : m[best]) v = 0;  // each world axis is taken once
  }
  return r;
}

Volume reorient(const Volume& v, const Reorientation& r) {
  check(r, "reorient");
  const Geometry& g = v.geometry();
  Geometry out_g = g;
  const auto n = index_sizes(v.shape());
  for (int i = 0; i < 3; ++i) {
    const auto k = static_cast<std::size_t>(r.world_axis[static_cast<std::size_t>(i)]);
    const double sign = r.flip[static_cast<std::size_t>(i)] ? -1.0 : 1.0;
    out_g.spacing[k] = g.spacing[static_cast<std::size_t>(i)];
    for (int row = 0; row < 3; ++row)
      out_g.direction[static_cast<std::size_t>(row * 3) + k] =
          sign * g.direction[static_cast<std::size_t>(row * 3 + i)];
    if (r.flip[static_cast<std::size_t>(i)])  // index 0 is now the far end of this axis
      for (int row = 0; row < 3; ++row)
        out_g.origin[static_cast<std::size_t>(row)] += g.direction[static_cast<std::size_t>(row * 3 + i)] *
                                                       g.spacing[static_cast<std::size_t>(i)] *
                                                       static_cast<double>(n[static_cast<std::size_t>(i)] - 1);
  }
  std::vector<unsigned char> buf(v.nbytes());
  const auto shape =
      permute(static_cast<const unsigned char*>(v.raw()), buf.data(), v.shape(), r, pixel_size(v.pixel_type()));
  Volume result(v.pixel_type(), shape, out_g);
  std::memcpy(result.raw(), buf.data(), buf.size());
  return result;
}

Volume reorient_back(const Volume& v, const Reorientation& r, const Geometry& file_geometry) {
  check(r, "reorient_back");
  const Reorientation inv = inverse(r);
  std::vector<unsigned char> buf(v.nbytes());
  const auto shape =
      permute(static_cast<const unsigned char*>(v.raw()), buf.data(), v.shape(), inv, pixel_size(v.pixel_type()));
  Volume result(v.pixel_type(), shape, file_geometry);
  std::memcpy(result.raw(), buf.data(), buf.size());
  return result;
}

std::vector<float> reorient_back_channels(const std::vector<float>& data, int64_t n,
                                          const std::array<int64_t, 3>& shape, const Reorientation& r) {
  check(r, "reorient_back_channels");
  const int64_t voxels = shape[0] * shape[1] * shape[2];
  MEDSEG_CHECK(static_cast<int64_t>(data.size()) == n * voxels, "reorient_back_channels: ", data.size(), " values for ",
               n, " volumes of ", voxels, " voxels");
  const Reorientation inv = inverse(r);
  std::vector<float> out(data.size());
  for (int64_t c = 0; c < n; ++c)
    permute(reinterpret_cast<const unsigned char*>(data.data() + c * voxels),
            reinterpret_cast<unsigned char*>(out.data() + c * voxels), shape, inv, sizeof(float));
  return out;
}

json reorientation_to_json(const Reorientation& r) { return {{"world_axis", r.world_axis}, {"flip", r.flip}}; }

Reorientation reorientation_from_json(const json& j, const std::string& source) {
  Reorientation r;
  try {
    r.world_axis = j.at("world_axis").get<std::array<int, 3>>();
    r.flip = j.at("flip").get<std::array<bool, 3>>();
  } catch (const json::exception& e) {
    throw FileError(
        source, std::string("reorientation must be {\"world_axis\": [3 axes], \"flip\": [3 booleans]}: ") + e.what());
  }
  try {
    check(r, "reorientation");
  } catch (const Error& e) { throw FileError(source, e.what()); }
  return r;
}

}  // namespace medseg::io
