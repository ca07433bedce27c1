// The DICOM writers (io/dicom_seg.h: DICOM SEG and RTSTRUCT) reference the series a label map was predicted on, so a
// label map off that series' grid (another shape, or the same shape somewhere else) is refused: one FileError naming
// the output file and the series, and no file written.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/dicom_seg.h"
#include "io/image_io.h"
#include "support/dicom_writer.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

TEST(DicomWriters, ALabelMapOffTheSeriesGridIsRefusedAndNothingIsWritten) {
  test::TempDir d("dcmgrid");
  const test::DicomSeriesSpec spec;  // 4 slices of 6 rows x 5 columns
  test::write_dicom_series(d / "ct", spec);
  const Volume ct = io::read_image(d / "ct");
  io::DicomSegSegment organ;
  organ.label = 1;
  organ.name = "organ";
  organ.category = io::generic_category();
  organ.type = io::generic_type();
  io::DicomSegInfo info;
  info.segments = {organ};

  const Volume other_shape(PixelType::UInt8, {ct.shape()[0], ct.shape()[1], ct.shape()[2] - 1}, ct.geometry());
  Geometry moved = ct.geometry();
  moved.origin[0] += 1.0;
  const Volume other_place(PixelType::UInt8, ct.shape(), moved);
  using Writer = std::function<void(const std::string&, const Volume&)>;
  const std::vector<std::pair<std::string, Writer>> writers = {
      {"DICOM SEG", [&](const std::string& out, const Volume& v) { io::write_dicom_seg(out, v, d / "ct", "", info); }},
      {"RTSTRUCT",
       [&](const std::string& out, const Volume& v) { io::write_dicom_rtstruct(out, v, d / "ct", "", info); }}};
  for (const auto& [what, write] : writers)
    for (const Volume* labels : {&other_shape, &other_place}) {
      const std::string out = d / "out.dcm";
      try {
        write(out, *labels);
        ADD_FAILURE() << what << ": a label map off the grid was written";
      } catch (const FileError& e) {
        EXPECT_EQ(e.path(), out);
        EXPECT_NE(std::string(e.what()).find("cannot write the " + what +
                                             ": the label map is not on the grid of the series in " + (d / "ct")),
                  std::string::npos)
            << e.what();
      }
      EXPECT_FALSE(fs::exists(out)) << what;
    }
  // The same label map on the series' grid is written (the refusal above is about the grid alone).
  const Volume on_grid(PixelType::UInt8, ct.shape(), ct.geometry());
  for (const auto& [what, write] : writers) {
    const std::string out = d / "ok.dcm";
    EXPECT_NO_THROW(write(out, on_grid)) << what;
    EXPECT_TRUE(fs::exists(out)) << what;
    fs::remove(out);
  }
}
