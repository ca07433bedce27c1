// nnU-Net's NibabelIOWithReorient against nibabel itself: a NIfTI file whose axes are permuted, flipped
// and slightly oblique, read with io::load_case(files, true), equals what nibabel's
// as_reoriented(io_orientation(affine)) gives (voxels and geometry), and reorient_back() restores the
// file's array and geometry exactly. Needs Debian's python3-nibabel (scripts/install_deps.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "core/atomic_writer.h"
#include "core/error.h"
#include "io/case_loader.h"
#include "io/image_io.h"
#include "io/reorient.h"
#include "support/test_support.h"

using namespace medseg;

namespace {

bool have_nibabel() { return std::system("/usr/bin/python3 -c 'import nibabel' >/dev/null 2>&1") == 0; }

// case_0000.nii.gz: x 5, y 4, z 3, voxel = 100 x + 10 y + z; its affine sends index x to -A, y to +S,
// z to -R (rotated 10 degrees about S), spacing 0.8 / 0.9 / 2.5. expected.nii.gz: nibabel's reoriented
// image of it. label.nii.gz: (x + y) % 3 on the same grid.
void write_files(const std::string& dir) {
  const std::string script = R"(
import sys, os, numpy as np, nibabel as nib
from nibabel.orientations import io_orientation
d = sys.argv[1]
x, y, z = np.meshgrid(np.arange(5), np.arange(4), np.arange(3), indexing='ij')
img = (100 * x + 10 * y + z).astype(np.float32)
c, s = np.cos(np.radians(10)), np.sin(np.radians(10))
rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
cols = np.array([[0, -1, 0], [0, 0, 1], [-1, 0, 0]], dtype=float).T  # index x, y, z -> world
aff = np.eye(4); aff[:3, :3] = rot @ cols @ np.diag([0.8, 0.9, 2.5]); aff[:3, 3] = [12, -7, 30]
im = nib.Nifti1Image(img, aff)
nib.save(im, os.path.join(d, 'case_0000.nii.gz'))
nib.save(nib.Nifti1Image(((x + y) % 3).astype(np.uint8), aff), os.path.join(d, 'label.nii.gz'))
nib.save(im.as_reoriented(io_orientation(aff)), os.path.join(d, 'expected.nii.gz'))
)";
  const std::string py = dir + "/write.py";
  write_file_atomic(py, script);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + py + " " + dir + " 2>&1").c_str()), 0);
}

void expect_same_geometry(const Geometry& a, const Geometry& b, double tol) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(a.spacing[i], b.spacing[i], tol) << i;
    EXPECT_NEAR(a.origin[i], b.origin[i], tol) << i;
  }
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(a.direction[i], b.direction[i], tol) << i;
}

}  // namespace

TEST(Reorient, EqualsNibabelsReorientedImage) {
  if (!have_nibabel()) GTEST_SKIP() << "no python3-nibabel";
  test::TempDir d("reorient");
  write_files(d.path());
  const io::LoadedCase c = io::load_case({"case", {d / "case_0000.nii.gz"}, d / "label.nii.gz"}, true);
  const Volume expected = io::read_image(d / "expected.nii.gz");
  ASSERT_TRUE(c.reorientation.has_value());
  EXPECT_FALSE(c.reorientation->identity());
  const Volume& got = c.channels.at(0);
  ASSERT_EQ(got.shape(), expected.shape());
  EXPECT_EQ(got.to_float(), expected.to_float());
  expect_same_geometry(got.geometry(), expected.geometry(), 1e-4);
  // The label goes the same way: (x + y) % 3 of the file's own index, wherever it lands.
  ASSERT_EQ(c.label.shape(), got.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const auto v = static_cast<int>(got.to_float()[static_cast<std::size_t>(i)]);
    EXPECT_EQ(c.label.to_double()[static_cast<std::size_t>(i)], (v / 100 + (v / 10) % 10) % 3) << i;
  }
}

TEST(Reorient, BackRestoresTheFileExactly) {
  if (!have_nibabel()) GTEST_SKIP() << "no python3-nibabel";
  test::TempDir d("reorient_back");
  write_files(d.path());
  const Volume file = io::read_image(d / "case_0000.nii.gz");
  const io::Reorientation r = io::ras_reorientation(file.geometry());
  const Volume back = io::reorient_back(io::reorient(file, r), r, file.geometry());
  EXPECT_EQ(back.shape(), file.shape());
  EXPECT_EQ(back.to_float(), file.to_float());
  EXPECT_TRUE(back.geometry() == file.geometry());
  // Probabilities: every channel the same way.
  const io::LoadedCase c = io::load_case({"case", {d / "case_0000.nii.gz"}, ""}, true);
  std::vector<float> two = c.channels[0].to_float();
  const std::size_t n = two.size();
  two.resize(2 * n);
  for (std::size_t i = 0; i < n; ++i) two[n + i] = -two[i];
  const std::vector<float> b = io::reorient_back_channels(two, 2, c.channels[0].shape(), r);
  const std::vector<float> f = file.to_float();
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(b[i], f[i]);
    EXPECT_EQ(b[n + i], -f[i]);
  }
}

TEST(Reorient, CanonicalFilesAreLeftAsTheyAre) {
  Geometry g;
  g.direction = {-1, 0, 0, 0, -1, 0, 0, 0, 1};  // RAS axes in ITK's LPS world
  EXPECT_TRUE(io::ras_reorientation(g).identity());
  const io::Reorientation lps = io::ras_reorientation(Geometry{});  // identity direction: L, P, S
  EXPECT_EQ(lps.world_axis, (std::array<int, 3>{0, 1, 2}));
  EXPECT_EQ(lps.flip, (std::array<bool, 3>{true, true, false}));
}

TEST(Reorient, MalformedJsonIsNamed) {
  try {
    io::reorientation_from_json(json{{"world_axis", {0, 0, 1}}, {"flip", {false, false, false}}}, "props.json");
    FAIL();
  } catch (const FileError& e) { EXPECT_EQ(e.path(), "props.json"); }
  const io::Reorientation r{{2, 0, 1}, {true, false, true}};
  EXPECT_TRUE(io::reorientation_from_json(io::reorientation_to_json(r), "x") == r);
}
