#pragma once
// DICOM image series for the tests, written element by element with GDCM: another library than DCMTK,
// which medseg reads them with (lib/io/dicom_series_dcmtk.cpp). Built only with ITK (whose Debian package
// brings GDCM and DCMTK).
#include <array>
#include <functional>
#include <string>
#include <vector>

namespace medseg::test {

struct DicomSeriesSpec {
  int rows = 6, columns = 5, slices = 4;
  std::array<double, 6> orientation{1, 0, 0, 0, 1, 0};  // row cosines, then column cosines
  std::array<double, 2> pixel_spacing{0.8, 0.6};        // DICOM's order: between rows, between columns
  std::array<double, 3> first_position{-10, 20, 30};    // slice 0's Image Position (Patient)
  double slice_step = 2.5;                              // mm along the normal (row x column) per slice
  double slope = 1, intercept = 0;                      // Rescale Slope/Intercept ("" written when 1/0: none)
  bool is_signed = true;
  int bits_stored = 16;
  std::string photometric = "MONOCHROME2";
  std::string modality = "CT", sop_class = "1.2.840.10008.5.1.4.1.1.2";  // CT Image Storage
  std::string study_uid = "1.2.826.0.1.3680043.10.543.1", series_uid = "1.2.826.0.1.3680043.10.543.1.1";
  std::string for_uid = "1.2.826.0.1.3680043.10.543.1.2", description = "synthetic series";
  // The stored (raw) value of slice k, row r, column c.
  std::function<int(int k, int r, int c)> raw = [](int k, int r, int c) { return 10 * k + 3 * r - c; };
  // Rows/Columns as the header declares them when > 0 (the pixel data stays rows x columns): hostile headers.
  int declared_rows = 0, declared_columns = 0;
  // Slice k's position when set (else first_position + k * slice_step * normal).
  std::function<std::array<double, 3>(int k)> position;
};

std::array<double, 3> slice_normal(const DicomSeriesSpec& s);
std::array<double, 3> slice_position(const DicomSeriesSpec& s, int k);

// Writes slice k to folder/<prefix><slices - 1 - k>.dcm (file names in the reverse of spatial order, so a
// reader that sorts by name is caught) and returns the paths in k order. Creates the folder.
std::vector<std::string> write_dicom_series(const std::string& folder, const DicomSeriesSpec& s,
                                            const std::string& prefix = "im");

// The same slices as one Enhanced CT multi-frame object at `file`: pixel measures and orientation shared,
// each frame's position and rescale in the Per-frame Functional Groups. Frame f holds slice slices - 1 - f
// (the reverse of spatial order). Returns `file`.
std::string write_enhanced_dicom(const std::string& file, const DicomSeriesSpec& s);

}  // namespace medseg::test
