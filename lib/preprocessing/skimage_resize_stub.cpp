// Resampling kernels when the build has no ITK (MEDSEG_WITH_ITK=OFF): every call explains why it fails.
#ifndef MEDSEG_WITH_ITK
#include "core/error.h"
#include "preprocessing/skimage_resize.h"

namespace medseg::preprocessing {

static Error no_itk() {
  return Error("this medseg build has no resampling kernels (configured with -DMEDSEG_WITH_ITK=OFF)");
}

bool resampling_available() { return false; }
void resize_3d(const float*, const Shape3&, float*, const Shape3&, int, bool) { throw no_itk(); }
void resize_slices(const float*, const Shape3&, int, float*, const Shape3&, int, bool) { throw no_itk(); }

}  // namespace medseg::preprocessing
#endif
