// nnU-Net's other image families (io/image_formats.h) on files written by independent libraries: Pillow
// (PNG, BMP, palettes, 16 bit), tifffile (2D and 3D TIFF) and a GIPL file whose 256-byte header this
// test packs itself. Values are a hand-made pattern, v = (7 y + 3 x + c) mod 256 for channel c, so
// every voxel's place and channel is checked. Needs Debian's python3-pil and python3-tifffile
// (scripts/install_deps.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "core/json_io.h"
#include "io/case_loader.h"
#include "io/dataset.h"
#include "io/image_formats.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

constexpr int kH = 5, kW = 6;  // 2D images: 5 rows (y), 6 columns (x)
double pattern(int64_t y, int64_t x, int c) { return static_cast<double>((7 * y + 3 * x + c) % 256); }

bool have_python_libs() {
  return std::system("/usr/bin/python3 -c 'import PIL, tifffile, numpy' >/dev/null 2>&1") == 0;
}

// Runs a Python snippet with numpy as np, PIL.Image as Image, tifffile, and `d` the folder; and the
// 2D pattern p(c) as a uint8 (H, W) array.
void python(const std::string& dir, const std::string& body) {
  const std::string script =
      "import sys, json, struct, numpy as np, tifffile\nfrom PIL import Image\nd = sys.argv[1]\n"
      "def p(c):\n    y, x = np.mgrid[0:" +
      std::to_string(kH) + ", 0:" + std::to_string(kW) +
      "]\n    return ((7 * y + 3 * x + c) % 256).astype(np.uint8)\n" + body + "\n";
  const std::string py = dir + "/gen.py";
  write_file_atomic(py, script);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + py + " " + dir + " 2>&1").c_str()), 0) << body;
}

void expect_pattern(const Volume& v, int c) {
  ASSERT_EQ(v.shape(), (std::array<int64_t, 3>{1, kH, kW}));
  for (int64_t y = 0; y < kH; ++y)
    for (int64_t x = 0; x < kW; ++x)
      ASSERT_EQ(v.at(0, y, x), pattern(y, x, c)) << "y " << y << " x " << x << " c " << c;
}

// nnU-Net's NaturalImage2DIO geometry: spacing (999, 1, 1) in its (z, y, x) order, origin 0, identity.
void expect_natural_geometry(const Volume& v) {
  const Geometry& g = v.geometry();
  EXPECT_EQ(g.spacing, (std::array<double, 3>{1, 1, 999}));
  EXPECT_EQ(g.origin, (std::array<double, 3>{0, 0, 0}));
  EXPECT_EQ(g.direction, (std::array<double, 9>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(g.file_dimension, 2);
}

std::string natural_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(NaturalImages, GrayPngIgnoresItsPhysicalSizeAndKeepsEveryPixel) {
  if (!have_python_libs()) GTEST_SKIP() << "no python3-pil / python3-tifffile";
  test::TempDir d("png");
  // 300 dpi in the pHYs chunk: nnU-Net ignores it (spacing 1), and so must medseg.
  python(d.path(), "Image.fromarray(p(0)).save(d + '/g.png', dpi=(300, 300))");
  const Volume v = io::read_image(d / "g.png");
  EXPECT_EQ(v.pixel_type(), PixelType::UInt8);
  expect_pattern(v, 0);
  expect_natural_geometry(v);
  EXPECT_EQ(io::image_file_channels(d / "g.png"), 1);
}

TEST(NaturalImages, RgbAndRgbaFilesAreThreeAndFourChannelsInFileOrder) {
  if (!have_python_libs()) GTEST_SKIP() << "no python3-pil / python3-tifffile";
  test::TempDir d("rgb");
  python(d.path(),
         "Image.fromarray(np.stack([p(0), p(1), p(2)], -1)).save(d + '/rgb.png')\n"
         "Image.fromarray(np.stack([p(0), p(1), p(2), p(3)], -1)).save(d + '/rgba.png')\n"
         "Image.fromarray(np.stack([p(0), p(1), p(2)], -1)).save(d + '/rgb.bmp')");
  for (const char* f : {"rgb.png", "rgba.png", "rgb.bmp"}) {
    SCOPED_TRACE(f);
    const std::vector<Volume> ch = io::read_image_volumes(d / f);
    const int n = std::string(f) == "rgba.png" ? 4 : 3;
    ASSERT_EQ(static_cast<int>(ch.size()), n);
    EXPECT_EQ(io::image_file_channels(d / f), n);
    for (int c = 0; c < n; ++c) {
      expect_pattern(ch[c], c);
      expect_natural_geometry(ch[c]);
    }
    // One channel where one is expected (a label): refused, naming the file.
    const std::string e = natural_error_of([&] { io::read_label(d / f); });
    EXPECT_NE(e.find(f), std::string::npos) << e;
    EXPECT_NE(e.find("components"), std::string::npos) << e;
  }
}

TEST(NaturalImages, PalettesAreLookedUpAsPillowReadsThem) {
  if (!have_python_libs()) GTEST_SKIP() << "no python3-pil / python3-tifffile";
  test::TempDir d("palette");
  // A gray BMP (Pillow writes mode L with a gray palette: one channel) and a color palette PNG whose
  // entry k is (k, 2k, 255 - k): three channels.
  python(d.path(),
         "Image.fromarray(p(0)).save(d + '/gray.bmp')\n"
         "im = Image.fromarray(p(0) % 64, mode='L').convert('P')\n"
         "im.putpalette([v for k in range(256) for v in (k, (2 * k) % 256, 255 - k)])\n"
         "im.save(d + '/pal.png')\n"
         "im.save(d + '/pal.bmp')");
  const Volume gray = io::read_image(d / "gray.bmp");
  expect_pattern(gray, 0);
  expect_natural_geometry(gray);
  // The channel count comes from the header alone; it must agree with what reading gives.
  EXPECT_EQ(io::image_file_channels(d / "gray.bmp"), 1);
  EXPECT_EQ(io::image_file_channels(d / "pal.bmp"), 3);
  EXPECT_EQ(io::read_image_volumes(d / "pal.bmp").size(), 3u);
  const std::vector<Volume> pal = io::read_image_volumes(d / "pal.png");
  ASSERT_EQ(pal.size(), 3u);
  EXPECT_EQ(io::image_file_channels(d / "pal.png"), 3);
  for (int64_t y = 0; y < kH; ++y)
    for (int64_t x = 0; x < kW; ++x) {
      const double k = std::fmod(pattern(y, x, 0), 64);
      ASSERT_EQ(pal[0].at(0, y, x), k);
      ASSERT_EQ(pal[1].at(0, y, x), std::fmod(2 * k, 256));
      ASSERT_EQ(pal[2].at(0, y, x), 255 - k);
    }
  EXPECT_NE(natural_error_of([&] { io::read_image(d / "pal.png"); }).find("palette"), std::string::npos);
}

TEST(NaturalImages, SixteenBitPngAndTwoDimensionalTiffKeepTheirValues) {
  if (!have_python_libs()) GTEST_SKIP() << "no python3-pil / python3-tifffile";
  test::TempDir d("wide");
  python(d.path(),
         "Image.fromarray(p(0).astype(np.uint16) * 250).save(d + '/w.png')\n"
         "tifffile.imwrite(d + '/f.tif', p(1).astype(np.float32) / 4)");
  const Volume w = io::read_image(d / "w.png");
  EXPECT_EQ(w.pixel_type(), PixelType::UInt16);
  for (int64_t y = 0; y < kH; ++y)
    for (int64_t x = 0; x < kW; ++x) ASSERT_EQ(w.at(0, y, x), 250 * pattern(y, x, 0));
  const Volume f = io::read_image(d / "f.tif");
  EXPECT_EQ(f.pixel_type(), PixelType::Float32);
  expect_natural_geometry(f);
  for (int64_t y = 0; y < kH; ++y)
    for (int64_t x = 0; x < kW; ++x) ASSERT_EQ(f.at(0, y, x), pattern(y, x, 1) / 4);
}

TEST(Tiff3d, StacksTakeTheirSpacingFromTheCasesSidecar) {
  if (!have_python_libs()) GTEST_SKIP() << "no python3-pil / python3-tifffile";
  test::TempDir d("tiff3d");
  // (z 4, y 5, x 6) with v = 100 z + 10 y + x; the image's sidecar is named after the case (nnU-Net:
  // case_0000.tif -> case.json), the label's after itself. tifffile keeps 3 or 4 slices as separate
  // sample planes of one page (read as slices, not colors) and more as pages: both are covered.
  python(d.path(),
         "z, y, x = np.mgrid[0:4, 0:5, 0:6]\n"
         "tifffile.imwrite(d + '/case_0000.tif', (100 * z + 10 * y + x).astype(np.uint16))\n"
         "tifffile.imwrite(d + '/lab.tif', ((x + y + z) % 3).astype(np.uint8))\n"
         "z, y, x = np.mgrid[0:7, 0:5, 0:6]\n"
         "tifffile.imwrite(d + '/bare.tiff', (10 * z + x).astype(np.uint8))\n"
         "json.dump({'spacing': [2.5, 0.7, 0.8]}, open(d + '/case.json', 'w'))\n"
         "json.dump({'spacing': [3, 2, 1]}, open(d + '/lab.json', 'w'))");
  const Volume v = io::read_image(d / "case_0000.tif");
  ASSERT_EQ(v.shape(), (std::array<int64_t, 3>{4, 5, 6}));
  EXPECT_EQ(v.at(3, 4, 5), 345);
  EXPECT_EQ(v.at(2, 1, 3), 213);
  EXPECT_EQ(v.geometry().spacing, (std::array<double, 3>{0.8, 0.7, 2.5}));  // (x, y, z)
  EXPECT_EQ(v.geometry().file_dimension, 3);
  const Volume lab = io::read_label(d / "lab.tif");
  EXPECT_EQ(lab.at(3, 4, 5), (3 + 4 + 5) % 3);
  EXPECT_EQ(lab.geometry().spacing, (std::array<double, 3>{1, 2, 3}));
  const Volume bare = io::read_image(d / "bare.tiff");
  ASSERT_EQ(bare.shape(), (std::array<int64_t, 3>{7, 5, 6}));
  EXPECT_EQ(bare.at(6, 2, 5), 65);
  EXPECT_EQ(bare.geometry().spacing, (std::array<double, 3>{1, 1, 1}));  // no sidecar
  EXPECT_EQ(io::image_file_channels(d / "case_0000.tif"), 1);

  // A bad sidecar is named.
  write_file_atomic(d / "case.json", R"({"spacing": [2.5, 0.7]})");
  const std::string e = natural_error_of([&] { io::read_image(d / "case_0000.tif"); });
  EXPECT_NE(e.find("case.json"), std::string::npos) << e;
  EXPECT_NE(e.find("3 numbers"), std::string::npos) << e;
  write_file_atomic(d / "case.json", R"({"spacing": [2.5, 0.7, -1]})");
  EXPECT_NE(natural_error_of([&] { io::read_image(d / "case_0000.tif"); }).find("positive"), std::string::npos);
}

TEST(NaturalImages, SegmentationsAreWrittenAsNnUNetWritesThemAndPillowReadsThemBack) {
  if (!have_python_libs()) GTEST_SKIP() << "no python3-pil / python3-tifffile";
  test::TempDir d("write");
  Geometry g2;
  g2.spacing = {1, 1, 999};
  g2.file_dimension = 2;
  std::vector<double> small(kH * kW), large(kH * kW);
  for (int64_t y = 0; y < kH; ++y)
    for (int64_t x = 0; x < kW; ++x) {
      small[y * kW + x] = static_cast<double>((x + y) % 4);
      large[y * kW + x] = 100.0 * static_cast<double>(x);  // up to 500: 16 bit
    }
  io::write_image(d / "small.png", Volume::from_values(PixelType::Int16, {1, kH, kW}, g2, small));
  io::write_image(d / "large.png", Volume::from_values(PixelType::Int16, {1, kH, kW}, g2, large));
  io::write_image(d / "small.bmp", Volume::from_values(PixelType::Int16, {1, kH, kW}, g2, small));
  Geometry g3;
  g3.spacing = {0.8, 0.7, 2.5};
  std::vector<double> stack(2 * kH * kW);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<double>(i % 5);
  io::write_image(d / "seg.tif", Volume::from_values(PixelType::Int16, {2, kH, kW}, g3, stack));
  python(d.path(),
         "def check(f, mode, want):\n"
         "    im = Image.open(d + '/' + f)\n"
         "    a = np.asarray(im)\n"
         "    assert im.mode in mode, (f, im.mode)\n"
         "    assert a.shape == want.shape and (a == want).all(), (f, a, want)\n"
         "y, x = np.mgrid[0:5, 0:6]\n"
         "check('small.png', ['L'], (x + y) % 4)\n"
         "check('small.bmp', ['L'], (x + y) % 4)\n"
         "check('large.png', ['I;16', 'I'], 100 * x)\n"
         "s = tifffile.imread(d + '/seg.tif')\n"
         "assert s.dtype == np.uint8 and s.shape == (2, 5, 6), (s.dtype, s.shape)\n"
         "assert (s.ravel() == np.arange(60) % 5).all()\n"
         "assert json.load(open(d + '/seg.json')) == {'spacing': [2.5, 0.7, 0.8]}");
  // What the formats cannot hold is refused, naming the file; nothing is left behind.
  EXPECT_NE(natural_error_of([&] {
              io::write_image(d / "big.bmp", Volume::from_values(PixelType::Int16, {1, kH, kW}, g2, large));
            }).find("big.bmp"),
            std::string::npos);
  std::vector<double> neg(small);
  neg[0] = -1;
  EXPECT_NE(natural_error_of([&] {
              io::write_image(d / "neg.png", Volume::from_values(PixelType::Int16, {1, kH, kW}, g2, neg));
            }).find("negative"),
            std::string::npos);
  for (const auto& e : fs::directory_iterator(d.path()))
    EXPECT_EQ(e.path().filename().string().rfind(".tmp_", 0), std::string::npos) << e.path();
  EXPECT_FALSE(fs::exists(d / "big.bmp"));
}

TEST(Gipl, AHandPackedGiplFileIsReadWithItsSpacingAndVoxels) {
  if (!have_python_libs()) GTEST_SKIP() << "no python3-pil / python3-tifffile";
  test::TempDir d("gipl");
  // GIPL: a 256-byte big-endian header (dims[4] u16, type u16 (15 = short), pixdim[4] f32, ..., origin[4]
  // f64 at 204, magic 0xefffe9b0 at 252), then the voxels, x fastest, big-endian.
  python(d.path(),
         "h = bytearray(256)\n"
         "struct.pack_into('>4H', h, 0, 6, 5, 4, 1)\n"
         "struct.pack_into('>H', h, 8, 15)\n"
         "struct.pack_into('>4f', h, 10, 0.75, 0.5, 2.0, 1.0)\n"
         "struct.pack_into('>4d', h, 204, 0.0, 0.0, 0.0, 0.0)\n"
         "struct.pack_into('>I', h, 252, 0xefffe9b0)\n"
         "z, y, x = np.mgrid[0:4, 0:5, 0:6]\n"
         "open(d + '/v.gipl', 'wb').write(bytes(h) + (100 * z + 10 * y + x - 50).astype('>i2').tobytes())");
  const Volume v = io::read_image(d / "v.gipl");
  ASSERT_EQ(v.shape(), (std::array<int64_t, 3>{4, 5, 6}));
  EXPECT_EQ(v.pixel_type(), PixelType::Int16);
  EXPECT_EQ(v.at(3, 4, 5), 345 - 50);
  EXPECT_EQ(v.at(0, 0, 0), -50);
  EXPECT_EQ(v.at(1, 2, 3), 123 - 50);
  EXPECT_NEAR(v.geometry().spacing[0], 0.75, 1e-6);
  EXPECT_NEAR(v.geometry().spacing[1], 0.5, 1e-6);
  EXPECT_NEAR(v.geometry().spacing[2], 2.0, 1e-6);
}

TEST(NaturalImages, AnRgbCaseIsOneFileHoldingTheChannelsDatasetJsonDeclares) {
  if (!have_python_libs()) GTEST_SKIP() << "no python3-pil / python3-tifffile";
  test::TempDir d("rgbcase");
  fs::create_directories(d / "imagesTr");
  python(d.path(),
         "Image.fromarray(np.stack([p(0), p(1), p(2)], -1)).save(d + '/imagesTr/road_0000.png')\n"
         "Image.fromarray(p(5)).save(d + '/imagesTr/mixed_0000.png')\n"
         "Image.fromarray(np.stack([p(6), p(7), p(8)], -1)).save(d + '/imagesTr/mixed_0001.png')");
  fs::create_directories(d / "one");
  fs::copy(d / "imagesTr/road_0000.png", d / "one/road_0000.png");
  // nnU-Net's road segmentation example: channel_names R, G, B and one file per case.
  const auto cases = io::list_image_cases(d / "one", ".png", 3);
  ASSERT_EQ(cases.size(), 1u);
  ASSERT_EQ(cases[0].images.size(), 1u);
  const io::LoadedCase c = io::load_case(cases[0]);
  ASSERT_EQ(c.channels.size(), 3u);
  for (int k = 0; k < 3; ++k) expect_pattern(c.channels[k], k);
  // A gray file then an RGB file: 4 channels in file order.
  fs::remove(d / "imagesTr/road_0000.png");
  const auto mixed = io::list_image_cases(d / "imagesTr", ".png", 4);
  ASSERT_EQ(mixed.size(), 1u);
  const io::LoadedCase m = io::load_case(mixed[0]);
  ASSERT_EQ(m.channels.size(), 4u);
  for (int k = 0; k < 4; ++k) expect_pattern(m.channels[k], 5 + k);
  // A dataset.json that declares another count is named with what the files hold.
  const std::string e = natural_error_of([&] { io::list_image_cases(d / "one", ".png", 2); });
  EXPECT_NE(e.find("road_0000.png"), std::string::npos) << e;
  EXPECT_NE(e.find("holds 3 channels in 1 file(s); dataset.json declares 2"), std::string::npos) << e;
  const std::string missing = natural_error_of([&] { io::list_image_cases(d / "imagesTr", ".png", 5); });
  EXPECT_NE(missing.find("mixed_0002.png"), std::string::npos) << missing;
}
