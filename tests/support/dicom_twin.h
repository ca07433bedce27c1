#pragma once
// A DICOM test series' NIfTI twin (support/dicom_writer.h): for the tests that link the library, apart from the
// torch-free writer, which does not.
#include "core/volume.h"
#include "support/dicom_writer.h"

namespace medseg::test {

// The NIfTI twin: the same values and the geometry the DICOM standard gives the series.
inline Volume nifti_twin(const DicomSeriesSpec& s) {
  Geometry g;
  g.spacing = {s.pixel_spacing[1], s.pixel_spacing[0], s.slice_step};
  g.origin = s.first_position;
  const auto n = slice_normal(s);
  for (int i = 0; i < 3; ++i) {
    g.direction[i * 3 + 0] = s.orientation[i];
    g.direction[i * 3 + 1] = s.orientation[3 + i];
    g.direction[i * 3 + 2] = n[i];
  }
  std::vector<float> v;
  for (int k = 0; k < s.slices; ++k)
    for (int r = 0; r < s.rows; ++r)
      for (int c = 0; c < s.columns; ++c) v.push_back(static_cast<float>(s.slope * s.raw(k, r, c) + s.intercept));
  return Volume::from_float({s.slices, s.rows, s.columns}, g, std::move(v));
}

}  // namespace medseg::test
