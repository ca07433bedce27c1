// The overlay picture (visualization/overlay.h) read back from disk: its size follows the voxel
// spacing, the views cut through the largest structure in the patient orientation the header
// promises, labels are blended in their colours over a grey image, the reference gets a second
// row, an empty segmentation still gives a (grey) picture, and an unwritable path is a FileError.
#include <gtest/gtest.h>

#include <cairo.h>

#include <filesystem>
#include <memory>

#include "core/error.h"
#include "io/dataset.h"
#include "support/test_support.h"
#include "visualization/overlay.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

// The volume of these tests: 10 x 40 x 60 voxels (z, y, x), spacing x = y = 1 mm, z = 3 mm, so
// 60 x 40 x 30 mm. Hand-computed view sizes (longer side 256 px):
//   axial    x by y: 60 x 40 mm -> 256 x 171;  coronal x by z: 60 x 30 mm -> 256 x 128;
//   sagittal y by z: 40 x 30 mm -> 256 x 192 (the row height).
// Views at x = 8, 272, 536; width 8 + 3 * 256 + 2 * 8 + 8 + 200 = 1000;
// height 30 + 18 + 192 + 8 = 248 (one row), 248 + 18 + 192 = 458 (with the reference row).
constexpr std::array<int64_t, 3> kShape{10, 40, 60};
constexpr int kAxialX = 8, kCoronalX = 272, kSagittalX = 536, kViewsY = 48, kRowStep = 210;
constexpr int kAxialH = 171, kCoronalH = 128, kSagittalH = 192;

Geometry geometry(std::array<double, 9> direction = {1, 0, 0, 0, 1, 0, 0, 0, 1}) {
  Geometry g;
  g.spacing = {1.0, 1.0, 3.0};
  g.direction = direction;
  return g;
}

// Intensity rises along x, so the window is not trivial.
Volume image(const Geometry& g) {
  Volume v(PixelType::Int16, kShape, g);
  auto* p = v.data<int16_t>();
  for (int64_t i = 0; i < v.numel(); ++i) p[i] = static_cast<int16_t>(100 + 10 * (i % kShape[2]));
  return v;
}

struct Cube {
  int value;
  std::array<int64_t, 3> lo, hi;  // inclusive, (z, y, x)
};
// The big cube (label 1) lies where the centre slices (5, 20, 30) miss it; the small one (label 2)
// is cut by the centre axial slice but not by the big cube's.
const Cube kBig{1, {1, 2, 2}, {3, 17, 25}};
const Cube kSmall{2, {5, 28, 40}, {8, 35, 51}};

Volume labels(const Geometry& g, const std::vector<Cube>& cubes) {
  Volume v(PixelType::UInt8, kShape, g);
  auto* p = v.data<uint8_t>();
  std::fill(p, p + v.numel(), uint8_t{0});
  for (const Cube& c : cubes)
    for (int64_t z = c.lo[0]; z <= c.hi[0]; ++z)
      for (int64_t y = c.lo[1]; y <= c.hi[1]; ++y)
        for (int64_t x = c.lo[2]; x <= c.hi[2]; ++x)
          p[(z * kShape[1] + y) * kShape[2] + x] = static_cast<uint8_t>(c.value);
  return v;
}

struct Png {
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> s{nullptr, cairo_surface_destroy};
  int width() const { return cairo_image_surface_get_width(s.get()); }
  int height() const { return cairo_image_surface_get_height(s.get()); }
  std::array<int, 3> rgb(double x, double y) const {
    const auto* row =
        cairo_image_surface_get_data(s.get()) + static_cast<int>(y) * cairo_image_surface_get_stride(s.get());
    const uint32_t p = reinterpret_cast<const uint32_t*>(row)[static_cast<int>(x)];
    return {static_cast<int>((p >> 16) & 255), static_cast<int>((p >> 8) & 255), static_cast<int>(p & 255)};
  }
};

Png read_png(const std::string& path) {
  Png p;
  p.s.reset(cairo_image_surface_create_from_png(path.c_str()));
  EXPECT_EQ(cairo_surface_status(p.s.get()), CAIRO_STATUS_SUCCESS) << path;
  cairo_surface_flush(p.s.get());
  return p;
}

// Centre of voxel (row index, column index) of a view whose display axes have nv x nh voxels; `up`:
// the row index counts upwards (superior on top).
std::pair<double, double> at(int x0, int y0, int w, int h, int64_t nh, int64_t nv, int64_t col, int64_t row, bool up) {
  const double r = up ? static_cast<double>(nv - 1 - row) : static_cast<double>(row);
  return {x0 + (static_cast<double>(col) + 0.5) * w / static_cast<double>(nh),
          y0 + (r + 0.5) * h / static_cast<double>(nv)};
}
std::pair<double, double> axial(int64_t y, int64_t x, int row = 0) {
  return at(kAxialX, kViewsY + row * kRowStep, 256, kAxialH, 60, 40, x, y, false);
}
std::pair<double, double> coronal(int64_t z, int64_t x) {
  return at(kCoronalX, kViewsY, 256, kCoronalH, 60, 10, x, z, true);
}
std::pair<double, double> sagittal(int64_t z, int64_t y) {
  return at(kSagittalX, kViewsY, 256, kSagittalH, 40, 10, y, z, true);
}

bool grey(const std::array<int, 3>& c) { return c[0] == c[1] && c[1] == c[2]; }
bool reddish(const std::array<int, 3>& c) { return c[0] > c[1] + 40 && c[0] > c[2] + 40; }   // label 1
bool greenish(const std::array<int, 3>& c) { return c[1] > c[0] + 30 && c[1] > c[2] + 30; }  // label 2

std::string show(const std::array<int, 3>& c) {
  return "rgb(" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]) + ")";
}

std::string render(const test::TempDir& d, const Volume& img, const Volume& seg, const Volume* ref = nullptr) {
  visualization::OverlayInput in;
  in.image = &img;
  in.segmentation = &seg;
  in.reference = ref;
  in.legend = {{1, "big"}, {2, "small"}};
  in.title = "case_001";
  const std::string path = d / "out/overlays/case_001.png";
  visualization::write_overlay(path, in);
  return path;
}

}  // namespace

TEST(Overlay, PictureSizeFollowsTheSpacing) {
  test::TempDir d("ovl");
  const Geometry g = geometry();
  const Png one = read_png(render(d, image(g), labels(g, {kBig, kSmall})));
  EXPECT_EQ(one.width(), 1000);
  EXPECT_EQ(one.height(), 248);
  const Volume seg = labels(g, {kBig, kSmall});
  const Png two = read_png(render(d, image(g), seg, &seg));
  EXPECT_EQ(two.width(), 1000);
  EXPECT_EQ(two.height(), 458);
  // Published atomically: nothing but the picture in its folder.
  EXPECT_EQ(std::distance(fs::directory_iterator(d / "out/overlays"), fs::directory_iterator()), 1);
}

TEST(Overlay, LayoutOfOtherShapes) {
  struct Row {
    const char* name;
    std::array<int64_t, 3> shape;
    std::array<double, 3> spacing;  // x, y, z
    bool reference;
    std::size_t legend;
    std::vector<std::array<int, 2>> views;  // width, height
    int width, height;
  };
  // 2D (one slice, nnU-Net's 999 x thick z): the axial view only, 8 + 256 + 8 + 200 wide.
  // Thin in-plane (x 0.5 mm): 20 x 100 x 50 voxels, x 25 mm, y 100 mm, z 40 mm.
  // Twenty legend entries need 30 + 18 + 20 * 18 + 8 = 416 px, more than the views.
  const std::vector<Row> rows = {
      {"two_d", {1, 40, 60}, {1, 1, 999}, false, 2, {{256, 171}}, 472, 227},
      {"thin_x",
       {20, 100, 50},
       {0.5, 1, 2},
       false,
       2,
       {{64, 256}, {160, 256}, {256, 102}},
       8 + 64 + 8 + 160 + 8 + 256 + 8 + 200,
       312},
      {"long_legend", {10, 40, 60}, {1, 1, 3}, false, 20, {{256, 171}, {256, 128}, {256, 192}}, 1000, 416},
      {"reference", {10, 40, 60}, {1, 1, 3}, true, 2, {{256, 171}, {256, 128}, {256, 192}}, 1000, 458},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    Geometry g;
    g.spacing = r.spacing;
    const auto l = visualization::overlay_layout(r.shape, g, r.reference, r.legend);
    ASSERT_EQ(l.views.size(), r.views.size());
    for (std::size_t i = 0; i < r.views.size(); ++i) {
      EXPECT_EQ(l.views[i].width, r.views[i][0]) << l.views[i].name;
      EXPECT_EQ(l.views[i].height, r.views[i][1]) << l.views[i].name;
    }
    EXPECT_EQ(l.width, r.width);
    EXPECT_EQ(l.height, r.height);
  }
}

TEST(Overlay, ViewsCutTheLargestStructureInPatientOrientation) {
  test::TempDir d("ovl");
  const Geometry g = geometry();
  const Png png = read_png(render(d, image(g), labels(g, {kBig, kSmall})));
  // Axial slice z = 1 (the big cube's first fullest slice): the big cube filled, the small one not cut.
  EXPECT_TRUE(reddish(png.rgb(axial(10, 14).first, axial(10, 14).second)))
      << show(png.rgb(axial(10, 14).first, axial(10, 14).second));
  EXPECT_TRUE(grey(png.rgb(axial(31, 45).first, axial(31, 45).second)))
      << show(png.rgb(axial(31, 45).first, axial(31, 45).second));
  EXPECT_TRUE(grey(png.rgb(axial(37, 57).first, axial(37, 57).second)));
  // Coronal slice y = 2: superior on top, so z = 2 is near the bottom and z = 8 near the top.
  EXPECT_TRUE(reddish(png.rgb(coronal(2, 14).first, coronal(2, 14).second)))
      << show(png.rgb(coronal(2, 14).first, coronal(2, 14).second));
  EXPECT_TRUE(grey(png.rgb(coronal(8, 14).first, coronal(8, 14).second)));
  // Sagittal slice x = 2: y across, z up.
  EXPECT_TRUE(reddish(png.rgb(sagittal(2, 10).first, sagittal(2, 10).second)))
      << show(png.rgb(sagittal(2, 10).first, sagittal(2, 10).second));
  EXPECT_TRUE(grey(png.rgb(sagittal(8, 10).first, sagittal(8, 10).second)));
  // Outside the views: background and title band, grey as well.
  EXPECT_TRUE(grey(png.rgb(4, 4)));
}

TEST(Overlay, SecondLabelHasItsOwnColour) {
  test::TempDir d("ovl");
  const Geometry g = geometry();
  const Png png = read_png(render(d, image(g), labels(g, {kSmall})));
  // Only the small cube: the views cut it (axial z = 5).
  EXPECT_TRUE(greenish(png.rgb(axial(31, 45).first, axial(31, 45).second)))
      << show(png.rgb(axial(31, 45).first, axial(31, 45).second));
  EXPECT_TRUE(grey(png.rgb(axial(10, 14).first, axial(10, 14).second)));
}

TEST(Overlay, LeftRightFlippedDirectionIsDrawnMirrored) {
  test::TempDir d("ovl");
  // The x index axis points to patient right (-L): index x = 14 is drawn at column 59 - 14 = 45.
  const Geometry g = geometry({-1, 0, 0, 0, 1, 0, 0, 0, 1});
  const Png png = read_png(render(d, image(g), labels(g, {kBig})));
  const auto mirrored = axial(10, 59 - 14), plain = axial(10, 14);
  EXPECT_TRUE(reddish(png.rgb(mirrored.first, mirrored.second))) << show(png.rgb(mirrored.first, mirrored.second));
  EXPECT_TRUE(grey(png.rgb(plain.first, plain.second))) << show(png.rgb(plain.first, plain.second));
}

TEST(Overlay, ReferenceGetsTheSecondRow) {
  test::TempDir d("ovl");
  const Geometry g = geometry();
  // The reference calls the big cube label 2: green in the second row, red in the first.
  const Volume seg = labels(g, {kBig}), ref = labels(g, {{2, kBig.lo, kBig.hi}});
  const Png png = read_png(render(d, image(g), seg, &ref));
  const auto p1 = axial(10, 14, 0), p2 = axial(10, 14, 1);
  EXPECT_TRUE(reddish(png.rgb(p1.first, p1.second))) << show(png.rgb(p1.first, p1.second));
  EXPECT_TRUE(greenish(png.rgb(p2.first, p2.second))) << show(png.rgb(p2.first, p2.second));
}

TEST(Overlay, EmptySegmentationIsStillDrawnAllGrey) {
  test::TempDir d("ovl");
  const Geometry g = geometry();
  const Png png = read_png(render(d, image(g), labels(g, {})));
  ASSERT_EQ(png.width(), 1000);
  ASSERT_EQ(png.height(), 248);
  for (int y = 0; y < png.height(); y += 3)
    for (int x = 0; x < png.width(); x += 3)
      ASSERT_TRUE(grey(png.rgb(x, y))) << x << ", " << y << " " << show(png.rgb(x, y));
}

TEST(Overlay, UnwritablePathIsAFileErrorAndLeavesNothing) {
  test::TempDir d("ovl");
  const Geometry g = geometry();
  const Volume img = image(g), seg = labels(g, {kBig});
  write_file_atomic(d / "blocker", "a file where the folder should be");
  visualization::OverlayInput in;
  in.image = &img;
  in.segmentation = &seg;
  in.title = "c";
  try {
    visualization::write_overlay(d / "blocker/overlays/c.png", in);
    FAIL() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find(d / "blocker/overlays/c.png"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::folder_snapshot(d.path()).size(), 1u);
}

TEST(Overlay, ShapeMismatchIsAnError) {
  const Geometry g = geometry();
  const Volume img = image(g);
  const Volume seg(PixelType::UInt8, {10, 40, 59}, g);
  visualization::OverlayInput in;
  in.image = &img;
  in.segmentation = &seg;
  test::TempDir d("ovl");
  EXPECT_THROW(visualization::write_overlay(d / "x.png", in), Error);
  EXPECT_FALSE(fs::exists(d / "x.png"));
}

TEST(Overlay, LegendNamesTheDatasetsValues) {
  const ordered_json plain = {{"channel_names", {{"0", "CT"}}},
                              {"labels", {{"background", 0}, {"liver", 1}, {"tumour", 2}, {"ignore", 3}}},
                              {"numTraining", 1},
                              {"file_ending", ".nii.gz"}};
  ordered_json regions = plain;
  // nnU-Net's region example (documentation/region_based_training.md): regions pair with
  // regions_class_order in the order dataset.json lists them, which is not by name.
  regions["labels"] = {{"background", 0}, {"whole_tumor", {1, 2, 3}}, {"tumor_core", {2, 3}}, {"enhancing_tumor", 3}};
  regions["regions_class_order"] = {1, 2, 3};
  struct Row {
    const char* name;
    ordered_json dataset;
    std::vector<std::pair<int, std::string>> expected;
  };
  for (const Row& r :
       std::vector<Row>{{"plain", plain, {{1, "liver"}, {2, "tumour"}}},
                        {"regions", regions, {{1, "whole_tumor"}, {2, "tumor_core"}, {3, "enhancing_tumor"}}}}) {
    SCOPED_TRACE(r.name);
    const auto legend = visualization::legend_from_dataset(io::dataset_info_from_json(r.dataset, "dataset.json"));
    std::vector<std::pair<int, std::string>> got;
    for (const auto& e : legend) got.emplace_back(e.value, e.name);
    EXPECT_EQ(got, r.expected);
  }
}
