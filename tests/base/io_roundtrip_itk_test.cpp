// Image IO round trips and geometry, checked against facts independent of medseg's code:
// a NIfTI header written byte by byte, and re-reading through ITK.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;

namespace {

Geometry make_geometry(const std::array<double, 9>& dir) {
  Geometry g;
  g.spacing = {0.7, 1.3, 2.9};
  g.origin = {-12.5, 33.25, 101.0};
  g.direction = dir;
  return g;
}

const std::array<double, 9> kLPS{1, 0, 0, 0, 1, 0, 0, 0, 1};
const std::array<double, 9> kRAS{-1, 0, 0, 0, -1, 0, 0, 0, 1};
const std::array<double, 9> kLAS{1, 0, 0, 0, -1, 0, 0, 0, 1};
// 30 degrees about z, then 20 degrees about x: a proper rotation, oblique to every axis.
std::array<double, 9> oblique() {
  const double a = 30 * M_PI / 180, b = 20 * M_PI / 180;
  const double rz[9] = {std::cos(a), -std::sin(a), 0, std::sin(a), std::cos(a), 0, 0, 0, 1};
  const double rx[9] = {1, 0, 0, 0, std::cos(b), -std::sin(b), 0, std::sin(b), std::cos(b)};
  std::array<double, 9> m{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) m[i * 3 + j] += rz[i * 3 + k] * rx[k * 3 + j];
  return m;
}

Volume ramp(PixelType t, const Geometry& g) {
  std::array<int64_t, 3> shape{5, 7, 9};
  std::vector<double> v(5 * 7 * 9);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t == PixelType::UInt8
               ? static_cast<double>(i % 251)
               : (static_cast<double>(i) - 100.0) * (t == PixelType::Float32 || t == PixelType::Float64 ? 0.37 : 1.0);
  return Volume::from_values(t, shape, g, v);
}

void expect_geometry_near(const Geometry& a, const Geometry& b, double tol) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(a.spacing[i], b.spacing[i], tol);
    EXPECT_NEAR(a.origin[i], b.origin[i], tol * 100);
  }
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(a.direction[i], b.direction[i], tol);
}

}  // namespace

struct RoundTripCase {
  std::string ending;
  PixelType type;
  int orientation;  // 0 LPS, 1 RAS, 2 LAS, 3 oblique
};

void PrintTo(const RoundTripCase& c, std::ostream* os) {
  *os << c.ending << " " << pixel_type_name(c.type) << " orientation " << c.orientation;
}

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, VoxelsAndGeometrySurvive) {
  const auto p = GetParam();
  const std::array<double, 9> dirs[4] = {kLPS, kRAS, kLAS, oblique()};
  const Geometry g = make_geometry(dirs[p.orientation]);
  const Volume v = ramp(p.type, g);
  test::TempDir dir("io");
  const std::string f1 = dir / ("a" + p.ending), f2 = dir / ("b" + p.ending);
  io::write_image(f1, v);
  const Volume a = io::read_image(f1);
  ASSERT_EQ(a.pixel_type(), p.type);
  ASSERT_EQ(a.shape(), v.shape());
  EXPECT_EQ(0, std::memcmp(a.raw(), v.raw(), v.nbytes())) << "voxels changed";
  // NIfTI stores geometry in float32: equal to that precision on the first read...
  expect_geometry_near(a.geometry(), g, 2e-6);
  // ...and a second pass through the file neither drifts nor changes voxels. (ITK re-orthogonalises
  // oblique directions stored as float32 quaternions, so "same" is float32-level, not bitwise.)
  io::write_image(f2, a);
  const Volume b = io::read_image(f2);
  EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes()));
  expect_geometry_near(b.geometry(), g, 2e-6);
}

INSTANTIATE_TEST_SUITE_P(
    Io, RoundTrip,
    ::testing::Values(RoundTripCase{".nii.gz", PixelType::UInt8, 0}, RoundTripCase{".nii.gz", PixelType::Int16, 1},
                      RoundTripCase{".nii.gz", PixelType::Float32, 2}, RoundTripCase{".nii.gz", PixelType::Float64, 3},
                      RoundTripCase{".nii", PixelType::Int16, 3}, RoundTripCase{".nii", PixelType::Float32, 1},
                      RoundTripCase{".nrrd", PixelType::Float32, 3}, RoundTripCase{".mha", PixelType::Int16, 2}),
    [](const ::testing::TestParamInfo<RoundTripCase>& row) {  // e.g. nii_gz_uint8_dir0 (0 LPS, 1 RAS, 2 LAS, 3 oblique)
      std::string name = row.param.ending.substr(1) + "_" + pixel_type_name(row.param.type) + "_dir" +
                         std::to_string(row.param.orientation);
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

namespace {

// A NIfTI-1 .nii assembled byte by byte: int16 voxels 0, 1, 2, ... in file order (x fastest),
// sform (scanner) from `srow`, no qform.
void write_hand_nifti(const std::string& path, const std::array<int16_t, 8>& dim, const std::array<float, 8>& pixdim,
                      const std::array<float, 12>& srow) {
  unsigned char hdr[352] = {0};
  auto put_i32 = [&](int off, int32_t v) { std::memcpy(hdr + off, &v, 4); };
  auto put_i16 = [&](int off, int16_t v) { std::memcpy(hdr + off, &v, 2); };
  auto put_f32 = [&](int off, float v) { std::memcpy(hdr + off, &v, 4); };
  put_i32(0, 348);
  for (int i = 0; i < 8; ++i) put_i16(40 + 2 * i, dim[i]);
  put_i16(70, 4);   // datatype: DT_INT16
  put_i16(72, 16);  // bitpix
  for (int i = 0; i < 8; ++i) put_f32(76 + 4 * i, pixdim[i]);
  put_f32(108, 352);  // vox_offset
  put_f32(112, 1);    // scl_slope
  put_i16(252, 0);    // qform_code
  put_i16(254, 1);    // sform_code: scanner
  for (int i = 0; i < 12; ++i) put_f32(280 + 4 * i, srow[i]);
  std::memcpy(hdr + 344, "n+1\0", 4);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(hdr), 352);
  int64_t n = 1;
  for (int i = 1; i <= dim[0]; ++i) n *= dim[i];
  for (int16_t v = 0; v < n; ++v) out.write(reinterpret_cast<const char*>(&v), 2);
}

// dim[0..7] and pixdim[0..7] of an uncompressed .nii, straight from its header bytes.
struct NiftiDims {
  std::array<int16_t, 8> dim{};
  std::array<float, 8> pixdim{};
};
NiftiDims read_nifti_dims(const std::string& path) {
  const std::string b = test::read_text(path);
  NiftiDims d;
  if (b.size() < 348) return d;
  std::memcpy(d.dim.data(), b.data() + 40, 16);
  std::memcpy(d.pixdim.data(), b.data() + 76, 32);
  return d;
}

}  // namespace

// sform maps voxel (i,j,k) to RAS mm as x = -2 i + 10, y = 3 j - 20, z = 4 k + 30. ITK reports
// LPS, so it must give spacing (2,3,4), origin (-10, 20, 30) and direction diag(1, -1, 1).
TEST(ImageIo, HandWrittenNiftiGeometryAndVoxelOrder) {
  test::TempDir dir("nifti");
  const std::string f = dir / "hand.nii";
  write_hand_nifti(f, {3, 4, 3, 2, 1, 1, 1, 1}, {1, 2, 3, 4, 1, 1, 1, 1}, {-2, 0, 0, 10, 0, 3, 0, -20, 0, 0, 4, 30});

  const Volume v = io::read_image(f);
  ASSERT_EQ(v.shape(), (std::array<int64_t, 3>{2, 3, 4}));  // z, y, x
  EXPECT_DOUBLE_EQ(v.at(0, 0, 1), 1.0);                     // x neighbours are consecutive in the file
  EXPECT_DOUBLE_EQ(v.at(0, 1, 0), 4.0);                     // one y step = nx values
  EXPECT_DOUBLE_EQ(v.at(1, 0, 0), 12.0);                    // one z step = nx*ny values
  const Geometry& g = v.geometry();
  EXPECT_NEAR(g.spacing[0], 2, 1e-6);
  EXPECT_NEAR(g.spacing[1], 3, 1e-6);
  EXPECT_NEAR(g.spacing[2], 4, 1e-6);
  EXPECT_NEAR(g.origin[0], -10, 1e-5);
  EXPECT_NEAR(g.origin[1], 20, 1e-5);
  EXPECT_NEAR(g.origin[2], 30, 1e-5);
  const double expect_dir[9] = {1, 0, 0, 0, -1, 0, 0, 0, 1};
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(g.direction[i], expect_dir[i], 1e-6) << i;
  EXPECT_EQ(g.spacing_zyx()[0], g.spacing[2]);
  EXPECT_EQ(g.file_dimension, 3);
}

// A 2D NIfTI (dim[0] = 2; x = -2 i + 10, y = 3 j - 20) is one z slice whose z spacing is
// 999 x the largest in-plane spacing (nnU-Net's readers), and is written back as 2D.
TEST(ImageIo, TwoDimensionalFileIsOneThickSliceAndStays2d) {
  test::TempDir dir("io2d");
  write_hand_nifti(dir / "flat.nii", {2, 4, 3, 1, 1, 1, 1, 1}, {1, 2, 3, 1, 1, 1, 1, 1},
                   {-2, 0, 0, 10, 0, 3, 0, -20, 0, 0, 1, 0});
  const Volume v = io::read_image(dir / "flat.nii");
  ASSERT_EQ(v.shape(), (std::array<int64_t, 3>{1, 3, 4}));
  EXPECT_DOUBLE_EQ(v.at(0, 2, 3), 11.0);
  const Geometry& g = v.geometry();
  EXPECT_EQ(g.file_dimension, 2);
  EXPECT_NEAR(g.spacing[0], 2, 1e-6);
  EXPECT_NEAR(g.spacing[1], 3, 1e-6);
  EXPECT_NEAR(g.spacing[2], 999 * 3, 1e-3);
  EXPECT_NEAR(g.origin[0], -10, 1e-5);
  EXPECT_NEAR(g.origin[1], 20, 1e-5);
  EXPECT_NEAR(g.direction[4], -1, 1e-6);

  io::write_image(dir / "again.nii", v);
  const NiftiDims d = read_nifti_dims(dir / "again.nii");
  EXPECT_EQ(d.dim[0], 2);
  EXPECT_EQ(d.dim[1], 4);
  EXPECT_EQ(d.dim[2], 3);
  EXPECT_FLOAT_EQ(d.pixdim[1], 2);
  EXPECT_FLOAT_EQ(d.pixdim[2], 3);
  const Volume back = io::read_image(dir / "again.nii");
  EXPECT_EQ(back.shape(), v.shape());
  EXPECT_EQ(back.geometry().file_dimension, 2);
  EXPECT_EQ(back.to_double(), v.to_double());

  // A 3D file that happens to hold one slice stays 3D, its z spacing as written.
  Geometry g3;
  g3.spacing = {2, 3, 5};
  io::write_image(dir / "slab.nii", Volume::from_values(PixelType::UInt8, {1, 6, 5}, g3, std::vector<double>(30, 7.0)));
  EXPECT_EQ(read_nifti_dims(dir / "slab.nii").dim[0], 3);
  const Volume slab = io::read_image(dir / "slab.nii");
  EXPECT_EQ(slab.shape(), (std::array<int64_t, 3>{1, 6, 5}));
  EXPECT_EQ(slab.geometry().file_dimension, 3);
  EXPECT_NEAR(slab.geometry().spacing[2], 5, 1e-6);
  EXPECT_EQ(slab.at(0, 5, 4), 7.0);
  EXPECT_EQ(geometry_mismatch(v.geometry(), v.shape(), slab.geometry(), v.shape()), "a 2D file vs a 3D file");
}

TEST(ImageIo, LabelsMustBeIntegers) {
  test::TempDir dir("lbl");
  Volume ok = Volume::from_values(PixelType::Float32, {2, 2, 2}, Geometry{}, {0, 1, 2, 0, 0, 1, 1, 2});
  io::write_image(dir / "ok.nii.gz", ok);
  const Volume l = io::read_label(dir / "ok.nii.gz");
  EXPECT_EQ(l.pixel_type(), PixelType::Int16);
  EXPECT_EQ(l.at(0, 0, 2 - 1), 1.0);
  Volume bad = Volume::from_values(PixelType::Float32, {2, 2, 2}, Geometry{}, {0, 1, 2, 0, 0, 1.5, 1, 2});
  io::write_image(dir / "bad.nii.gz", bad);
  try {
    io::read_label(dir / "bad.nii.gz");
    FAIL() << "non-integer label accepted";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.nii.gz"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("non-integer"), std::string::npos);
  }
}
