#pragma once
// The geometry behind an overlay picture (overlay.h): which index axes a view shows and in which
// direction, which slices it cuts, and how large it is drawn.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/volume.h"

namespace medseg::visualization {

// A display axis: the array axis (0 = z, 1 = y, 2 = x) it walks along, and whether the index falls
// while the picture goes right (horizontal) or down (vertical).
struct DisplayAxis {
  int array_axis = 0;
  bool flip = false;
  int64_t index(int64_t pos, int64_t n) const { return flip ? n - 1 - pos : pos; }
};

struct ViewSpec {
  std::string name;
  int slice_axis = 0;  // array axis the view cuts across
  DisplayAxis h, v;
  int width = 0, height = 0;  // pixels on the canvas
};

// The axial, coronal and sagittal views of a volume of this shape and geometry, in that order,
// without those that are one voxel thin along a side (at least the axial one remains).
std::vector<ViewSpec> patient_views(const std::array<int64_t, 3>& shape, const Geometry& g);

// Per array axis, the slice through the largest connected component of `labels != 0` that holds most
// of its voxels; `found` false (and the centre slices) when there is no foreground.
struct SliceChoice {
  std::array<int64_t, 3> index{0, 0, 0};
  bool found = false;
};
SliceChoice slices_through_largest_structure(const Volume& labels);
std::array<int64_t, 3> centre_slices(const std::array<int64_t, 3>& shape);

}  // namespace medseg::visualization
