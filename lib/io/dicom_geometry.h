#pragma once
// A DICOM series' volume geometry from its slices' Image Position (Patient), the shared Image
// Orientation (Patient) and Pixel Spacing (io/dicom_series.h reads them). Pure arithmetic, no DICOM
// library, so that the checks can be tested on hand-made positions.
#include <array>
#include <string>
#include <vector>

#include "core/volume.h"

namespace medseg::io {

struct DicomSlice {
  std::string name;                  // the file (and frame) for messages
  std::array<double, 3> position{};  // Image Position (Patient), mm, LPS
};

struct DicomSeriesGeometry {
  Geometry geometry;               // x = along a row, y = down a column, z = slice normal (row x column)
  std::vector<std::size_t> order;  // indices into the slices given, sorted along the normal, ascending
};

// orientation: the row then column direction cosines; pixel_spacing: DICOM's order (between rows,
// between columns); slice_thickness (0 when absent) is the z spacing of a one-slice series only.
// Throws FileError(`where`, ...) for two slices at one position, a missing slice or spacing that varies
// by more than 1 % of the median, gantry tilt (positions that move within the slice plane by more than
// 1 % of the slice distance), orientation cosines that are not unit and orthogonal, non-positive spacing.
DicomSeriesGeometry series_geometry(const std::string& where, std::vector<DicomSlice> slices,
                                    const std::array<double, 6>& orientation,
                                    const std::array<double, 2>& pixel_spacing, double slice_thickness);

}  // namespace medseg::io
