// Corrupt and missing files give a FileError naming the file, never a crash or silent garbage.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "io/case_loader.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

void expect_file_error(const std::string& path, const std::string& fragment) {
  try {
    io::read_image(path);
    FAIL() << "no error for " << path;
  } catch (const FileError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(fs::path(path).filename().string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

Volume noise_volume(std::array<int64_t, 3> shape, Geometry g = {}) {
  std::vector<double> v(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
  uint32_t s = 12345;
  for (auto& x : v) x = ((s = s * 1664525u + 1013904223u) >> 8) % 1000 / 10.0;  // incompressible-ish
  return Volume::from_values(PixelType::Float32, shape, g, v);
}

}  // namespace

TEST(ImageIoErrors, MissingFile) { expect_file_error("/nonexistent/dir/x.nii.gz", "not found"); }

TEST(ImageIoErrors, ZeroSizedFile) {
  test::TempDir d("err");
  std::ofstream(d / "empty.nii.gz").close();
  expect_file_error(d / "empty.nii.gz", "empty");
}

TEST(ImageIoErrors, WrongMagic) {
  test::TempDir d("err");
  std::ofstream(d / "junk.nii") << std::string(400, 'x');
  expect_file_error(d / "junk.nii", "");
}

TEST(ImageIoErrors, TruncatedGzip) {
  test::TempDir d("err");
  io::write_image(d / "full.nii.gz", noise_volume({16, 32, 32}));
  const auto size = fs::file_size(d / "full.nii.gz");
  fs::copy_file(d / "full.nii.gz", d / "cut.nii.gz");
  fs::resize_file(d / "cut.nii.gz", size / 2);
  expect_file_error(d / "cut.nii.gz", "");
}

TEST(ImageIoErrors, TruncatedUncompressed) {
  test::TempDir d("err");
  io::write_image(d / "full.nii", noise_volume({8, 16, 16}));
  fs::copy_file(d / "full.nii", d / "cut.nii");
  fs::resize_file(d / "cut.nii", fs::file_size(d / "full.nii") - 100);
  expect_file_error(d / "cut.nii", "");
}

// ITK's NIfTI library turns NaN into 0 without a word; medseg must refuse the file instead.
TEST(ImageIoErrors, NaNAndInfVoxelsAreRefused) {
  test::TempDir d("err");
  std::vector<double> v(4 * 5 * 6, 1.0);
  v[7] = std::nan("");
  v[9] = std::numeric_limits<double>::infinity();
  for (const char* name : {"nan.nii.gz", "nan.nii", "nan.nrrd"}) {
    io::write_image(d / name, Volume::from_values(PixelType::Float32, {4, 5, 6}, Geometry{}, v));
    expect_file_error(d / name, "2 voxel(s) are NaN or Inf");
  }
  io::write_image(d / "nan64.nii.gz", Volume::from_values(PixelType::Float64, {4, 5, 6}, Geometry{}, v));
  expect_file_error(d / "nan64.nii.gz", "NaN");
}

TEST(ImageIoErrors, UnknownEndingOnWrite) {
  EXPECT_THROW(io::write_image("/tmp/x.unknownext", noise_volume({2, 2, 2})), FileError);
}

TEST(CaseLoader, GeometryMismatchNamesBothFiles) {
  test::TempDir d("case");
  Geometry g1, g2;
  g2.spacing = {1.0, 1.0, 1.5};
  io::write_image(d / "c_0000.nii.gz", noise_volume({4, 5, 6}, g1));
  io::write_image(d / "c_0001.nii.gz", noise_volume({4, 5, 6}, g2));
  io::write_image(d / "c_0002.nii.gz", noise_volume({4, 5, 7}, g1));
  try {
    io::load_case({"c", {d / "c_0000.nii.gz", d / "c_0001.nii.gz"}, ""});
    FAIL();
  } catch (const FileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("c_0000.nii.gz"), std::string::npos) << m;
    EXPECT_NE(m.find("c_0001.nii.gz"), std::string::npos) << m;
    EXPECT_NE(m.find("spacing"), std::string::npos) << m;
  }
  try {
    io::load_case({"c", {d / "c_0000.nii.gz", d / "c_0002.nii.gz"}, ""});
    FAIL();
  } catch (const FileError& e) { EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what(); }
  // Within tolerance (1e-4 relative) is the same grid.
  Geometry g3 = g1;
  g3.spacing[0] *= 1 + 1e-6;
  io::write_image(d / "c_0003.nii.gz", noise_volume({4, 5, 6}, g3));
  EXPECT_NO_THROW(io::load_case({"c", {d / "c_0000.nii.gz", d / "c_0003.nii.gz"}, ""}));
}
