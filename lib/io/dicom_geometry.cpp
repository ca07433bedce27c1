#include "io/dicom_geometry.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace medseg::io {

namespace {

using Vec = std::array<double, 3>;

double dot(const Vec& a, const Vec& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Vec cross(const Vec& a, const Vec& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
Vec minus(const Vec& a, const Vec& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
double norm(const Vec& a) { return std::sqrt(dot(a, a)); }

// Cosines as scanners write them are unit to about 6 decimals.
constexpr double kCosineTolerance = 1e-4;
// Slice distances may vary by 1 % of the median (the bound; dcm2niix warns at a similar step).
constexpr double kSpacingTolerance = 0.01;

void check_orientation(const std::string& where, const Vec& row, const Vec& col) {
  MEDSEG_CHECK_FILE(!(std::abs(norm(row) - 1) > kCosineTolerance || std::abs(norm(col) - 1) > kCosineTolerance ||
                      std::abs(dot(row, col)) > kCosineTolerance),
                    where, "Image Orientation (Patient) is not two orthogonal unit vectors (row ", row[0], "\\", row[1],
                    "\\", row[2], ", column ", col[0], "\\", col[1], "\\", col[2], ")");
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The distances between neighbouring slices along the normal: equal within 1 %, and no slice moves
// sideways (tilt). Returns the mean distance.
double check_spacing(const std::string& where, const std::vector<DicomSlice>& s, const std::vector<double>& along,
                     const Vec& normal) {
  std::vector<double> gaps;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    const double gap = along[i + 1] - along[i];
    MEDSEG_CHECK_FILE(!(gap <= 1e-4), where, "two slices at one position (", along[i],
                      " mm along the slice normal): ", s[i].name, " and ", s[i + 1].name);
    gaps.push_back(gap);
  }
  const double med = median(gaps);
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    if (std::abs(gaps[i] - med) > kSpacingTolerance * med) {
      const std::string between = concat(along[i], " and ", along[i + 1], " mm (", s[i].name, ", ", s[i + 1].name,
                                         "): ", gaps[i], " mm where the other slices are ", med, " mm apart");
      MEDSEG_CHECK_FILE(!(gaps[i] > 1.5 * med), where, "a slice is missing between ", between);
      throw FileError(where, "slice spacing varies by more than 1 % between " + between);
    }
    const Vec step = minus(s[i + 1].position, s[i].position);
    const Vec sideways = minus(step, {gaps[i] * normal[0], gaps[i] * normal[1], gaps[i] * normal[2]});
    MEDSEG_CHECK_FILE(!(norm(sideways) > kSpacingTolerance * gaps[i]), where, "gantry tilt or sheared slices: from ",
                      s[i].name, " to ", s[i + 1].name, " the position moves ", norm(sideways),
                      " mm within the slice plane (", gaps[i], " mm along the normal); resample the series first");
  }
  return (along.back() - along.front()) / static_cast<double>(gaps.size());
}

}  // namespace

DicomSeriesGeometry series_geometry(const std::string& where, std::vector<DicomSlice> slices,
                                    const std::array<double, 6>& orientation,
                                    const std::array<double, 2>& pixel_spacing, double slice_thickness) {
  MEDSEG_CHECK(!slices.empty(), "series_geometry: no slices");
  const Vec row{orientation[0], orientation[1], orientation[2]}, col{orientation[3], orientation[4], orientation[5]};
  check_orientation(where, row, col);
  MEDSEG_CHECK_FILE(pixel_spacing[0] > 0 && pixel_spacing[1] > 0, where, "Pixel Spacing must be positive, got ",
                    pixel_spacing[0], "\\", pixel_spacing[1]);
  const Vec normal = cross(row, col);
  DicomSeriesGeometry out;
  for (std::size_t i = 0; i < slices.size(); ++i) out.order.push_back(i);
  std::stable_sort(out.order.begin(), out.order.end(), [&](std::size_t a, std::size_t b) {
    return dot(slices[a].position, normal) < dot(slices[b].position, normal);
  });
  std::vector<DicomSlice> sorted;
  for (std::size_t i : out.order) sorted.push_back(slices[i]);
  slices = std::move(sorted);
  std::vector<double> along;
  for (const DicomSlice& s : slices) along.push_back(dot(s.position, normal));
  double dz = slice_thickness > 0 ? slice_thickness : 1.0;
  if (slices.size() > 1) dz = check_spacing(where, slices, along, normal);

  Geometry& g = out.geometry;
  g.spacing = {pixel_spacing[1], pixel_spacing[0], dz};
  g.origin = slices.front().position;
  for (int r = 0; r < 3; ++r) {
    g.direction[r * 3 + 0] = row[r];
    g.direction[r * 3 + 1] = col[r];
    g.direction[r * 3 + 2] = normal[r];
  }
  return out;
}

}  // namespace medseg::io
