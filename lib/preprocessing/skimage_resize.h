#pragma once
// Resampling kernels on a regular voxel grid, implemented with ITK's ResampleImageFilter and its
// interpolators (skimage_resize_itk.cpp). This header does not expose ITK; a build without ITK gets
// stubs that throw (skimage_resize_stub.cpp).
//
// The kernels mirror skimage.transform.resize(image, out_shape, order, mode='edge',
// anti_aliasing=False, clip=True), which nnU-Net uses for data and (one-hot) labels:
//  * pixel-area aligned coordinates: output index o along an axis of input length n and output
//    length m samples the input at continuous index (o + 0.5) * n / m - 0.5;
//  * order 0 = nearest neighbour (ties round up, like scipy's order-0 map_coordinates),
//    order 1 = linear (clamped at the border = 'edge'), order 2..5 = B-spline of that order;
//  * B-splines are built on the input padded by kSplineEdgePad replicated border voxels, the way
//    scipy.ndimage.zoom pre-pads for mode 'nearest', so the border behaves like nnU-Net's
//    (ITK itself mirrors at the border; see docs/preprocessing.md);
//  * clip: the result is clipped to [min, max] of the input (skimage's clip=True).
// Arrays are float, C order (z, y, x); shapes are in array order.
#include <array>
#include <cstdint>

#include "core/grid.h"

namespace medseg::preprocessing {

constexpr int kSplineEdgePad = 12;  // scipy's pre-padding for spline orders > 1 with mode 'nearest'

// True when this build has the ITK resampling kernels (MEDSEG_WITH_ITK).
bool resampling_available();

// Resizes `src` (shape `in`) to `dst` (shape `out`, preallocated). An axis whose length does not
// change is sampled at the input's own grid positions. Throws Error for an empty shape or an
// unsupported order.
void resize_3d(const float* src, const Shape3& in, float* dst, const Shape3& out, int order, bool clip = true);

// Resizes every 2D slice along `axis` (0, 1 or 2) on its own: out[axis] must equal in[axis]. This
// is nnU-Net's in-plane pass of "separate z" resampling (skimage.resize per slice, per-slice clip).
void resize_slices(const float* src, const Shape3& in, int axis, float* dst, const Shape3& out, int order,
                   bool clip = true);

}  // namespace medseg::preprocessing
