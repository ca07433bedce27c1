#pragma once
// Visual QA of a segmentation: one PNG per case with an axial, a coronal and a sagittal slice of the
// image, the segmentation drawn over it (semi-transparent fills plus outlines), optionally a second
// row with the reference segmentation on the same slices, a legend and the case name as title.
// Meant to be flipped through: fifty cases checked by eye in a minute (docs/predict.md).
//
// Geometry of the picture (fixed, so that tests and users can rely on it):
//  * Views follow the patient, not the array: each world axis (x = L, y = P, z = S of LPS) is
//    matched to the index axis its direction column points along most. Axial: patient left on the
//    right, anterior at the top; coronal: left on the right, superior at the top; sagittal:
//    anterior on the left, superior at the top (the radiological convention).
//  * Each view keeps the physical aspect ratio (voxel count x spacing) and is scaled so that its
//    longer side is kViewSize pixels; a view with one voxel along a side (the thick axis of a 2D
//    image) is left out.
//  * Canvas: title band kTitle, then per row a caption band kCaption and the views (row height: the
//    tallest view), kMargin around, kGap between views, the legend in a kLegend-wide column on the
//    right. View i of row r starts at x = kMargin + sum_{j<i}(w_j + kGap),
//    y = kTitle + r * (kCaption + row_height) + kCaption.
//  * Slices: through the largest connected foreground structure of the segmentation (the slice
//    holding most of its voxels, per view); of the reference when the segmentation is empty; the
//    centre slices when both are empty.
//  * Grey levels: the image's 0.5th..99.5th percentile mapped to black..white (grey: r = g = b).
//  * Colours by label value (label 1 red, 2 green, 3 yellow, 4 blue, 5 orange, then purple, cyan,
//    magenta, ...; repeating after 19); fills blend the colour at kFillAlpha over the image.
#include <string>
#include <vector>

#include "core/volume.h"
#include "io/dataset.h"

namespace medseg::visualization {

constexpr int kViewSize = 256, kTitle = 30, kCaption = 18, kMargin = 8, kGap = 8, kLegend = 200, kLegendRow = 18;
constexpr double kFillAlpha = 0.4;

struct LegendEntry {
  int value = 0;
  std::string name;
};

// The values a segmentation written by medseg holds, named as dataset.json names them: each plain
// label (background and "ignore" left out); for regions, each region's regions_class_order value,
// or nothing when the dataset has no regions_class_order. Values without an entry are drawn all the
// same and listed as "label V".
std::vector<LegendEntry> legend_from_dataset(const io::DatasetInfo& dataset);

struct OverlayInput {
  const Volume* image = nullptr;         // intensities (any pixel type)
  const Volume* segmentation = nullptr;  // integer labels, the image's shape
  const Volume* reference = nullptr;     // optional second row, the image's shape
  std::vector<LegendEntry> legend;
  std::string title;  // the case name
};

// Renders and writes the PNG atomically (the folder is created). Throws Error for mismatched
// shapes and FileError naming `png_path` when it cannot be written. A build without cairo
// (MEDSEG_WITH_CAIRO=OFF) throws Error saying so: it cannot draw.
void write_overlay(const std::string& png_path, const OverlayInput& in);

// One view's place on the canvas, for callers that need to find a voxel in the picture.
struct ViewRect {
  std::string name;  // "axial", "coronal", "sagittal"
  int x = 0, y = 0, width = 0, height = 0;
};
struct Layout {
  int width = 0, height = 0;
  std::vector<ViewRect> views;  // first row; a reference row is the same shifted down by row_step
  int row_step = 0;
};
Layout overlay_layout(const std::array<int64_t, 3>& shape_zyx, const Geometry& geometry, bool with_reference,
                      std::size_t legend_entries);

// False in a build without cairo (MEDSEG_WITH_CAIRO=OFF): write_overlay then throws.
bool overlays_available();

}  // namespace medseg::visualization
