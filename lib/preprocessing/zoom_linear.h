#pragma once
// scipy.ndimage.zoom(order=1, mode='nearest', grid_mode=True) in float64, term for term: what
// skimage.transform.resize(order=1, mode='edge', anti_aliasing=False) computes for nnU-Net's one-hot
// label masks. A segmentation's resampled label is an argmax over these scores and a near tie
// (0.5000000000000003 against 0.49999999999999967) is decided by the last bit, so the scores are
// reproduced in scipy's own operation order rather than by ITK's interpolator (preprocessing/skimage_resize.h), which
// agrees with them only to a float step.
#include "core/grid.h"

namespace medseg::preprocessing {

// Resizes `src` (shape `in`, C order) to `dst` (shape `out`, preallocated). Output index o along an axis
// of lengths n -> m samples input position (o + 0.5) * (n / m) - 0.5, clamped to the edge; an axis that
// keeps its length is sampled at its own grid positions.
//
// The result is clipped to the input's [min, max] (skimage's clip=True). With `slice_axis` 0..2, the
// volume is a stack of 2D images along that axis (in[slice_axis] == out[slice_axis]) and each slice is
// clipped to its own range, as nnU-Net's separate-z pass resizes slice by slice; -1 clips to the whole
// volume's range.
void zoom_linear(const double* src, const Shape3& in, double* dst, const Shape3& out, int slice_axis = -1);

}  // namespace medseg::preprocessing
