#pragma once
// batchgeneratorsv2 SpatialTransform as nnU-Net configures it (no elastic deformation, no random
// crop): with probability p_rotation rotate about every axis by U(-max, max) (each axis kept with
// p_rot_per_axis), with probability p_scaling scale all axes by one factor U(0.7, 1.4) (> 1 shows a
// larger region: smaller objects; DA5: U(0.7, 1.43) per axis); then take the centred final patch of
// the loader patch.
//  * Output voxel offset p from the patch centre samples the input at A p from the input centre,
//    A = Rz(a2) Ry(a1) Rx(a0) diag(s) with Rx rotating the (y, x) array axes etc. (BG2's
//    create_affine_matrix_3d); 2D / dummy-2D use A = R(a) diag(s_y, s_x) in the (y, x) plane per z-slice.
//  * Nearest (the *Ord0 trainers: mode_image / mode_seg 'nearest'): grid_sample's nearest sample
//    instead, labels as they are; outside the loader patch 0 / -1 as above.
//  * Image: trilinear (bilinear in-plane) grid_sample, zeros outside, align_corners=False.
//  * Segmentation: every present label (-1 included) is resampled as a one-hot channel scaled by
//    1000, rounded to float16, and the largest wins (lowest label on ties); samples beyond the outer
//    voxel centres become -1. medseg allows 1e-3 voxel of rounding there (BG2 has no tolerance, so
//    a 90-degree rotation can mark border voxels as outside).
//  * Neither rotation nor scaling: a plain centred crop (start = floor(S/2) - P//2), padding 0 / -1.
// The transform is planned before anything is read: the loader then reads only the part of the
// case the output touches (the touched box, or the centred final patch), not the whole loader
// patch, and resample.h does the rest in one pass.
#include <array>

#include "core/grid.h"
#include "data/augment/config.h"
#include "data/augment/resample.h"
#include "data/augment/sample.h"
#include "data/rng.h"

namespace medseg::data::augment {

struct SpatialParams {
  bool rotate = false, scale = false;
  std::array<double, 3> angles{0, 0, 0};  // radians about array axes 0, 1, 2; in-plane uses angles[0]
  std::array<double, 3> scales{1, 1, 1};  // per array axis (z, y, x); in-plane uses y and x
  bool nearest_image = false, nearest_seg = false;
  bool active() const { return rotate || scale; }
};

SpatialParams sample_spatial(const AugmentConfig& cfg, Rng& rng);

// What to read from a loader patch of shape `loader` and how to map it to the final `patch`.
struct SpatialPlan {
  bool active = false;  // rotation or scaling; otherwise a centred crop
  SpatialMap map;       // map.lo / map.crop: the box of the loader patch that is read
  Box read_box() const { return {map.lo, {map.lo[0] + map.crop[0], map.lo[1] + map.crop[1], map.lo[2] + map.crop[2]}}; }
};

// `in_plane`: 2D / dummy-2D (loader z must equal patch z).
SpatialPlan plan_spatial(const Shape3& loader, const Shape3& patch, const SpatialParams& p, bool in_plane);

// `region`: the loader patch's `plan.read_box()` (data (C, box), seg (1, box)), as a case source
// read of that box gives it (outside the case: 0 / -1). Returns the final patch; an inactive plan
// hands `region` back as it is. `into`: contiguous (C, patch) / (1, patch) tensors to write the
// result to (a caller's reused buffers); otherwise new tensors.
Sample apply_spatial(const Sample& region, const SpatialPlan& plan, Sample* into = nullptr);

// The same from a whole loader patch (tests, callers that hold one). Never aliases `in`.
Sample apply_spatial(const Sample& in, const Shape3& patch, const SpatialParams& p, bool in_plane);

// Centred crop/pad of a (C, z, y, x) tensor to `patch` (BG2's crop_tensor around floor(S/2)).
at::Tensor center_crop(const at::Tensor& t, const Shape3& patch, double pad);

}  // namespace medseg::data::augment
