// Real de-identified DICOM files from a PyPI package: pydicom's test data (MR_small.dcm in several
// encodings, CT_small.dcm), read by medseg and compared with the values and geometry pydicom gives for
// them. The lossless encodings (implicit and big-endian VR, RLE, JPEG-LS) must give MR_small.dcm's
// values exactly; JPEG 2000, which this build cannot decode, is refused naming the transfer syntax.
// Needs the venv of scripts/dicom_reference.sh (MEDSEG_DICOM_PYTHON, which scripts/test.sh sets).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

// What pydicom says of a test file: rows, columns, position, pixel spacing, then the rescaled values.
struct Reference {
  std::string path;
  int rows = 0, cols = 0;
  double position[3] = {0, 0, 0}, spacing[2] = {0, 0};
  std::vector<double> values;
};

Reference pydicom_reference(const std::string& python, const std::string& name, const test::TempDir& d) {
  const std::string script = d / "ref.py", out = d / (name + ".txt");
  std::ofstream(script) << "import sys, pydicom\n"
                           "from pydicom.data import get_testdata_file\n"
                           "p = get_testdata_file(sys.argv[1])\n"
                           "ds = pydicom.dcmread(p)\n"
                           "a = ds.pixel_array * float(getattr(ds, 'RescaleSlope', 1)) + "
                           "float(getattr(ds, 'RescaleIntercept', 0))\n"
                           "print(p)\n"
                           "print(ds.Rows, ds.Columns, *ds.ImagePositionPatient, *ds.PixelSpacing)\n"
                           "print(' '.join(repr(float(v)) for v in a.ravel()))\n";
  const int rc = std::system((python + " " + script + " " + name + " > " + out + " 2>&1").c_str());
  EXPECT_EQ(rc, 0) << test::read_text(out);
  std::istringstream in(test::read_text(out));
  Reference r;
  std::getline(in, r.path);
  in >> r.rows >> r.cols >> r.position[0] >> r.position[1] >> r.position[2] >> r.spacing[0] >> r.spacing[1];
  double v = 0;
  while (in >> v) r.values.push_back(v);
  return r;
}

// The file alone in a folder of its own, as a one-slice series.
std::string as_series(const std::string& file, const test::TempDir& d, const std::string& name) {
  const std::string folder = d / name;
  fs::create_directories(folder);
  fs::copy_file(file, folder + "/slice.dcm");
  return folder;
}

}  // namespace

TEST(DicomPublicFiles, PydicomsTestFilesReadAsPydicomReadsThem) {
  const char* python = std::getenv("MEDSEG_DICOM_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "MEDSEG_DICOM_PYTHON is not set (scripts/test.sh sets it)";
  test::TempDir d("dcmpub");
  for (const char* name : {"MR_small.dcm", "CT_small.dcm"}) {
    const Reference ref = pydicom_reference(python, name, d);
    ASSERT_EQ(ref.values.size(), static_cast<std::size_t>(ref.rows * ref.cols)) << name;
    const Volume v = io::read_image(as_series(ref.path, d, name));
    ASSERT_EQ(v.shape(), (std::array<int64_t, 3>{1, ref.rows, ref.cols})) << name;
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(v.geometry().origin[i], ref.position[i], 1e-6) << name;
    EXPECT_NEAR(v.geometry().spacing[0], ref.spacing[1], 1e-9) << name;
    EXPECT_NEAR(v.geometry().spacing[1], ref.spacing[0], 1e-9) << name;
    for (int64_t i = 0; i < v.numel(); ++i)
      ASSERT_EQ(v.at(0, i / ref.cols, i % ref.cols), ref.values[static_cast<std::size_t>(i)]) << name << " voxel " << i;
  }
  // The lossless encodings of MR_small: the same values.
  const Reference mr = pydicom_reference(python, "MR_small.dcm", d);
  const fs::path dir = fs::path(mr.path).parent_path();
  for (const char* name :
       {"MR_small_implicit.dcm", "MR_small_bigendian.dcm", "MR_small_RLE.dcm", "MR_small_jpeg_ls_lossless.dcm"}) {
    const Volume v = io::read_image(as_series((dir / name).string(), d, name));
    ASSERT_EQ(v.numel(), static_cast<int64_t>(mr.values.size())) << name;
    for (int64_t i = 0; i < v.numel(); ++i)
      ASSERT_EQ(v.at(0, i / mr.cols, i % mr.cols), mr.values[static_cast<std::size_t>(i)]) << name << " voxel " << i;
  }
  const std::string jp2k = as_series((dir / "MR_small_jp2klossless.dcm").string(), d, "jp2k");
  try {
    io::read_image(jp2k);
    ADD_FAILURE() << "JPEG 2000 was decoded: change the test";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot decode the pixel data: transfer syntax JPEG 2000"), std::string::npos)
        << e.what();
  }
}
