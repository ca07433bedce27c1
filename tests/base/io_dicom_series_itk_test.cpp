// DICOM series read by medseg (DCMTK) from files GDCM wrote (support/dicom_writer.h), against
// what the writer was told: stored values through Rescale Slope/Intercept, positions and cosines as the
// geometry, and one clear refusal for each kind of series the issue lists as bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/dicom_series.h"
#include "io/image_io.h"
#include "support/dicom_writer.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

// An oblique plane: rotated 30 degrees about z, then tilted 20 degrees out of the axial plane.
test::DicomSeriesSpec oblique_ct() {
  test::DicomSeriesSpec s;
  const double a = 30 * M_PI / 180, b = 20 * M_PI / 180;
  s.orientation = {std::cos(a), std::sin(a), 0, -std::sin(a) * std::cos(b), std::cos(a) * std::cos(b), std::sin(b)};
  s.slope = 2;
  s.intercept = -1024;
  s.raw = [](int k, int r, int c) { return 100 * k - 40 * r + 7 * c - 90; };  // negative values too
  return s;
}

// The value medseg must return at (z, y, x) when slice k sits at z.
void expect_voxels(const Volume& v, const test::DicomSeriesSpec& s, const std::function<int(int)>& slice_at_z) {
  ASSERT_EQ(v.shape(), (std::array<int64_t, 3>{s.slices, s.rows, s.columns}));
  for (int z = 0; z < s.slices; ++z)
    for (int r = 0; r < s.rows; ++r)
      for (int c = 0; c < s.columns; ++c)
        ASSERT_DOUBLE_EQ(v.at(z, r, c), s.slope * s.raw(slice_at_z(z), r, c) + s.intercept)
            << z << "," << r << "," << c;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FileError& e) { return e.what(); }
  return "(no FileError)";
}

void expect_refused(const std::string& folder, const std::string& phrase) {
  const std::string msg = error_of([&] { io::read_image(folder); });
  EXPECT_NE(msg.find(phrase), std::string::npos) << msg;
  EXPECT_NE(msg.find(folder), std::string::npos) << msg;
}

}  // namespace

TEST(DicomSeries, ReadsAnObliqueCtSeriesInHounsfieldUnits) {
  test::TempDir d("dcm");
  const auto s = oblique_ct();
  test::write_dicom_series(d / "ct", s);
  ASSERT_TRUE(io::is_dicom_folder(d / "ct"));
  const Volume v = io::read_image(d / "ct");
  expect_voxels(v, s, [](int z) { return z; });
  const Geometry& g = v.geometry();
  EXPECT_NEAR(g.spacing[0], 0.6, 1e-9);  // between columns
  EXPECT_NEAR(g.spacing[1], 0.8, 1e-9);  // between rows
  EXPECT_NEAR(g.spacing[2], 2.5, 1e-6);
  const auto n = test::slice_normal(s);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(g.origin[i], s.first_position[i], 1e-6);
    EXPECT_NEAR(g.direction[i * 3 + 0], s.orientation[i], 1e-9);
    EXPECT_NEAR(g.direction[i * 3 + 1], s.orientation[3 + i], 1e-9);
    EXPECT_NEAR(g.direction[i * 3 + 2], n[i], 1e-9);
  }
}

// Slices are placed by position along the normal; file names and instance numbers say nothing.
TEST(DicomSeries, SortsSlicesAlongTheNormal) {
  test::TempDir d("dcm");
  auto s = oblique_ct();
  s.slice_step = -3;  // slice k = 0 is the highest
  test::write_dicom_series(d / "ct", s);
  const Volume v = io::read_image(d / "ct");
  expect_voxels(v, s, [&s](int z) { return s.slices - 1 - z; });
  const auto last = test::slice_position(s, s.slices - 1);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(v.geometry().origin[i], last[i], 1e-6);
  EXPECT_NEAR(v.geometry().spacing[2], 3, 1e-6);
}

// Rows running right to left and columns bottom to top (a flipped acquisition): the direction says so,
// the voxels stay in the files' row and column order.
TEST(DicomSeries, ReadsAFlippedSeries) {
  test::TempDir d("dcm");
  test::DicomSeriesSpec s;
  s.orientation = {-1, 0, 0, 0, -1, 0};
  s.slice_step = 2;
  test::write_dicom_series(d / "flip", s);
  const Volume v = io::read_image(d / "flip");
  expect_voxels(v, s, [](int z) { return z; });
  const std::array<double, 9> want{-1, 0, 0, 0, -1, 0, 0, 0, 1};  // normal = row x column = +z
  for (int i = 0; i < 9; ++i)
    EXPECT_NEAR(v.geometry().direction[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)], 1e-12) << i;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(v.geometry().origin[i], s.first_position[i], 1e-9);
}

// An Enhanced CT object (one file, positions and rescale per frame in functional groups, frames in the
// reverse of spatial order) reads as the classic series of the same slices.
TEST(DicomSeries, ReadsAnEnhancedMultiFrameObjectAsItsClassicSeries) {
  test::TempDir d("dcm");
  const auto s = oblique_ct();
  test::write_dicom_series(d / "classic", s);
  test::write_enhanced_dicom(d / "enhanced/ct.dcm", s);
  const Volume classic = io::read_image(d / "classic"), enhanced = io::read_image(d / "enhanced");
  expect_voxels(enhanced, s, [](int z) { return z; });
  EXPECT_EQ(geometry_mismatch(enhanced.geometry(), enhanced.shape(), classic.geometry(), classic.shape()), "");
  EXPECT_EQ(io::read_image(d / "enhanced/ct.dcm").shape(), enhanced.shape());  // the file itself
}

TEST(DicomSeries, ReadsUnsignedTwelveBitPixels) {
  test::TempDir d("dcm");
  test::DicomSeriesSpec s;
  s.is_signed = false;
  s.bits_stored = 12;
  s.raw = [](int k, int r, int c) { return 4095 - 300 * k - 20 * r - c; };
  test::write_dicom_series(d / "mr", s);
  expect_voxels(io::read_image(d / "mr"), s, [](int z) { return z; });
}

// MONOCHROME1 shows low values bright; medseg inverts it to the MONOCHROME2 sense, as GDCM does: a stored
// value v becomes (the stored range's min + max) - v, here -1 - v for signed 16 bits, then rescaled.
TEST(DicomSeries, InvertsMonochrome1) {
  test::TempDir d("dcm");
  test::DicomSeriesSpec s;
  s.photometric = "MONOCHROME1";
  s.slope = 2;
  s.intercept = 10;
  test::write_dicom_series(d / "cr", s);
  const Volume v = io::read_image(d / "cr");
  for (int z = 0; z < s.slices; ++z)
    for (int r = 0; r < s.rows; ++r)
      for (int c = 0; c < s.columns; ++c) ASSERT_DOUBLE_EQ(v.at(z, r, c), 2 * (-1 - s.raw(z, r, c)) + 10);
}

TEST(DicomSeries, OneSliceTakesItsThicknessAsZSpacing) {
  test::TempDir d("dcm");
  test::DicomSeriesSpec s;
  s.slices = 1;
  s.slice_step = 4;
  test::write_dicom_series(d / "one", s);
  const Volume v = io::read_image(d / "one");
  EXPECT_EQ(v.shape()[0], 1);
  EXPECT_NEAR(v.geometry().spacing[2], 4, 1e-9);
}

TEST(DicomSeries, SeveralSeriesAreListedAndOneCanBePicked) {
  test::TempDir d("dcm");
  test::DicomSeriesSpec a, b;
  b.series_uid = "1.2.826.0.1.3680043.10.543.1.9";
  b.description = "second";
  b.raw = [](int k, int r, int c) { return 1000 + k + r + c; };
  test::write_dicom_series(d / "two", a, "a");
  test::write_dicom_series(d / "two", b, "b");
  const std::string msg = error_of([&] { io::read_image(d / "two"); });
  EXPECT_NE(msg.find("holds 2 series"), std::string::npos) << msg;
  EXPECT_NE(msg.find(a.series_uid), std::string::npos) << msg;
  EXPECT_NE(msg.find(b.series_uid + " 'second'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--series_uid"), std::string::npos) << msg;
  const auto listed = io::list_dicom_series(d / "two");
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[1].files, 4);
  expect_voxels(io::read_dicom_series(d / "two", b.series_uid), b, [](int z) { return z; });
  EXPECT_NE(error_of([&] { io::read_dicom_series(d / "two", "1.2.3"); }).find("no series with UID 1.2.3"),
            std::string::npos);
}

TEST(DicomSeries, RefusesMissingSlicesUnevenSpacingTiltAndDuplicates) {
  test::TempDir d("dcm");
  test::DicomSeriesSpec s;
  s.slices = 6;
  const auto files = test::write_dicom_series(d / "gap", s);
  fs::remove(files[3]);
  expect_refused(d / "gap", "a slice is missing between");

  auto uneven = s;
  uneven.position = [](int k) { return std::array<double, 3>{0, 0, 2.5 * k + (k >= 4 ? 0.2 : 0)}; };
  test::write_dicom_series(d / "uneven", uneven);
  expect_refused(d / "uneven", "slice spacing varies by more than 1 %");

  auto tilt = s;
  tilt.position = [](int k) { return std::array<double, 3>{0, 0.4 * k, 2.5 * k}; };  // 9 degrees
  test::write_dicom_series(d / "tilt", tilt);
  expect_refused(d / "tilt", "gantry tilt");

  auto dup = s;
  dup.position = [](int k) { return std::array<double, 3>{0, 0, 2.5 * (k == 5 ? 4 : k)}; };
  test::write_dicom_series(d / "dup", dup);
  expect_refused(d / "dup", "two slices at one position");
}

TEST(DicomSeries, RefusesMixedSizesAndOrientations) {
  test::TempDir d("dcm");
  test::DicomSeriesSpec s, bigger, turned;
  bigger.rows = 7;
  bigger.first_position = {-10, 20, 40};
  test::write_dicom_series(d / "sizes", s, "a");
  test::write_dicom_series(d / "sizes", bigger, "b");
  expect_refused(d / "sizes", "slices of different sizes");
  turned.orientation = {0, 1, 0, 1, 0, 0};
  turned.first_position = {-10, 20, 40};
  test::write_dicom_series(d / "turned", s, "a");
  test::write_dicom_series(d / "turned", turned, "b");
  expect_refused(d / "turned", "different orientations");
}

TEST(DicomSeries, RefusesNonImagesAndFilesThatAreNotDicom) {
  test::TempDir d("dcm");
  test::DicomSeriesSpec seg;
  seg.sop_class = "1.2.840.10008.5.1.4.1.1.66.4";
  seg.modality = "SEG";
  test::write_dicom_series(d / "seg", seg);
  expect_refused(d / "seg", "only non-image objects");
  expect_refused(d / "seg", "a Segmentation (SEG)");

  test::write_dicom_series(d / "named", test::DicomSeriesSpec{});
  std::ofstream(d / "named/notes.dcm") << "not a DICOM file at all";
  const std::string msg = error_of([&] { io::read_image(d / "named"); });
  EXPECT_NE(msg.find("notes.dcm: named .dcm but not a DICOM file"), std::string::npos) << msg;

  fs::create_directories(d / "empty");
  std::ofstream(d / "empty/readme.txt") << "nothing here";
  expect_refused(d / "empty", "no DICOM files");
}

TEST(DicomSeries, RefusesTruncatedFilesAndHugeHeadersBeforeReadingPixels) {
  test::TempDir d("dcm");
  const auto files = test::write_dicom_series(d / "cut", test::DicomSeriesSpec{});
  fs::resize_file(files[2], fs::file_size(files[2]) - 30);  // into the pixel data
  const std::string msg = error_of([&] { io::read_image(d / "cut"); });
  EXPECT_NE(msg.find(files[2]), std::string::npos) << msg;
  fs::resize_file(files[2], 200);  // into the header
  EXPECT_NE(error_of([&] { io::read_image(d / "cut"); }).find(files[2]), std::string::npos);

  // 65535 x 65535 declared on every slice, with a few bytes of pixel data.
  test::DicomSeriesSpec big;
  big.declared_rows = big.declared_columns = 65535;
  test::write_dicom_series(d / "big", big);
  expect_refused(d / "big", "over the limit");
}
