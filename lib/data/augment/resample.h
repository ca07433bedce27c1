#pragma once
// The spatial transform's resampling, fused: one pass over the output computes each voxel's input
// position once and uses it for every image channel and for the segmentation.
//  * Image: trilinear (3D) or bilinear per z-slice (in-plane), zeros outside, align_corners=False.
//  * Segmentation: BG2 resamples one one-hot channel (x1000) per present label, rounds each to
//    float16 and takes the largest (lowest label on ties). Only the labels of the 8 (4) neighbours
//    can be non-zero, so a weighted vote over the neighbours gives the same labels in one pass.
//  * The arithmetic is ATen's grid_sampler's, operation for operation (the CPU 3D kernel; the
//    vectorised 2D kernel, whose AVX2 / AVX-512 builds contract into fused multiply-adds), so the
//    result equals the grid_sample formulation value for value; tests hold it to that.
// No torch here: plain buffers, so the loops stay simple enough for the compiler.
#include <array>
#include <cstdint>

#include "core/grid.h"

namespace medseg::data::augment {

using Mat3 = std::array<std::array<double, 3>, 3>;

// Shared by this CPU resampler and the device one (device_spatial.cpp).
inline constexpr double kOutsideTolerance = 1e-3;  // voxels a sample may lie outside the patch (BG2 has none)
inline constexpr double kOneHotScale = 1000.0;     // BG2's one-hot scale

// Output offsets p (from the patch centre) map to input offsets q = m p (from the loader patch's
// centre). `ndim` 2 maps (y, x) only, per z-slice (2D and dummy-2D; then patch z == loader z).
// The resampler reads the box [lo, lo + crop) of the loader patch, which must hold every voxel a
// sample touches (spatial.h's plan_spatial computes it).
struct SpatialMap {
  Mat3 m{};
  int ndim = 3;
  Shape3 loader{0, 0, 0};
  Shape3 patch{0, 0, 0};
  Shape3 lo{0, 0, 0};
  Shape3 crop{0, 0, 0};
  // grid_sample's nearest instead of (tri/bi)linear: the image, the labels (as they are, no vote).
  bool nearest_image = false, nearest_seg = false;
};

// `image`: (channels, crop) float32, contiguous; `out_image`: (channels, patch).
// `seg`: (crop) int16; `out_seg`: (patch); -1 where the sample lies beyond the loader patch's outer
// voxel centres (with 1e-3 voxel of tolerance). `channels` 0: labels only; `seg` null: image only.
// `kernel`: the 3D linear pass runs on AVX-512 (16 voxels at a time, gathers) where the processor has AVX-512
// F/BW/DQ/VL, else on the portable loops; Portable forces the latter. Both give the same bits (tests hold them to it).
enum class ResampleKernel { Auto, Portable };
void resample(const SpatialMap& map, const float* image, int64_t channels, const int16_t* seg, float* out_image,
              int16_t* out_seg, ResampleKernel kernel = ResampleKernel::Auto);

}  // namespace medseg::data::augment
