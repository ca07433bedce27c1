#pragma once
// The closed outlines of a 2D binary mask, as RT Structure Sets store a segmentation: ITK's marching
// squares (ContourExtractor2DImageFilter) at level 0.5 on the mask padded with a zero border, so every
// outline closes, also along the image's edges.
#include <array>
#include <cstdint>
#include <vector>

namespace medseg::io {

// One closed polygon per outline (the first vertex is not repeated at the end), vertices as continuous
// (column, row) indices: a lone pixel at (c, r) gives the diamond through (c +- 0.5, r) and (c, r +- 0.5).
// Holes are outlines of their own; filling every polygon with the even-odd rule at pixel centres gives
// the mask back. Diagonal neighbours are connected (one outline for a diagonal pair).
using Contour = std::vector<std::array<double, 2>>;
std::vector<Contour> mask_contours(const uint8_t* mask, int64_t rows, int64_t columns);

// True when this build has the contour extraction (MEDSEG_WITH_ITK).
bool mask_contours_available();

}  // namespace medseg::io
