#pragma once
// Crop to nonzero, as nnU-Net v2 does before fingerprinting, preprocessing and prediction:
//  1. mask = OR over channels of (data != 0), then holes filled (background that cannot reach the
//     volume border through face-connected background becomes foreground; scipy's
//     binary_fill_holes with its default 3D structure),
//  2. crop every channel and the label to the mask's bounding box,
//  3. label voxels that are 0 and outside the filled mask become -1.
// All shapes and boxes are in array order (z, y, x); boxes are half-open [lo, hi).
#include <array>
#include <cstdint>
#include <vector>

#include "core/grid.h"
#include "core/volume.h"

namespace medseg::fingerprint {

// OR over channels of voxel != 0 (NaN counts as nonzero, as in numpy). 1 = nonzero.
std::vector<uint8_t> nonzero_mask(const std::vector<Volume>& channels);

// Fills holes in a 0/1 mask in place (face connectivity). For a volume with one slice every
// voxel touches the border, so nothing is filled (nnU-Net's behaviour for 2D images too).
void fill_holes(std::vector<uint8_t>& mask, const Shape3& shape);

// Bounding box of the nonzero voxels; the whole volume when the mask is empty (as acvl_utils).
Box bbox_of_mask(const std::vector<uint8_t>& mask, const Shape3& shape);

struct CropResult {
  Box bbox;
  Shape3 shape_before{0, 0, 0};
  std::vector<Volume> channels;  // cropped; pixel types kept, origin moved to the box corner
  Volume seg;                    // cropped label with -1 outside the mask (signed integer type)
  std::vector<uint8_t> mask;     // cropped filled mask, 1 = inside
  Shape3 shape_after() const { return bbox.shape(); }
  double relative_size() const;  // prod(after) / prod(before)
};

// `seg` may be null or empty (numel()==0): then the returned seg is Int8, 0 inside the mask and
// -1 outside, as nnU-Net builds it for cases without a label. All channels (and seg) must share
// one shape. Unsigned or float labels are converted to a signed integer type to hold -1.
CropResult crop_to_nonzero(const std::vector<Volume>& channels, const Volume* seg = nullptr);

// Geometry of the sub-volume starting at index `lo` (z, y, x) of a volume with geometry `g`.
Geometry cropped_geometry(const Geometry& g, const Shape3& lo);

// Copies box `b` out of a (z, y, x) array of `shape` into `dst` (b.numel() elements).
template <class T>
void crop_array(const T* src, const Shape3& shape, const Box& b, T* dst) {
  const Shape3 s = b.shape();
  for (int64_t z = 0; z < s[0]; ++z)
    for (int64_t y = 0; y < s[1]; ++y) {
      const T* row = src + ((b.lo[0] + z) * shape[1] + (b.lo[1] + y)) * shape[2] + b.lo[2];
      T* out = dst + (z * s[1] + y) * s[2];
      for (int64_t x = 0; x < s[2]; ++x) out[x] = row[x];
    }
}

// Inverse of crop_array: writes `src` (box-shaped) into box `b` of `dst` (full `shape`), leaving
// the rest of `dst` untouched.
template <class T>
void uncrop_array(const T* src, const Box& b, const Shape3& shape, T* dst) {
  const Shape3 s = b.shape();
  for (int64_t z = 0; z < s[0]; ++z)
    for (int64_t y = 0; y < s[1]; ++y) {
      const T* in = src + (z * s[1] + y) * s[2];
      T* row = dst + ((b.lo[0] + z) * shape[1] + (b.lo[1] + y)) * shape[2] + b.lo[2];
      for (int64_t x = 0; x < s[2]; ++x) row[x] = in[x];
    }
}

// Crops a volume to box `b` (pixel type kept, origin moved to the box corner).
Volume crop_volume(const Volume& v, const Box& b);

// Puts `cropped` back into a new volume of `full_shape` and `full_geometry` whose other voxels
// are `fill` (cast to the pixel type). Throws Error when the box does not fit.
Volume uncrop(const Volume& cropped, const Box& b, const Shape3& full_shape, const Geometry& full_geometry,
              double fill = 0.0);

}  // namespace medseg::fingerprint
