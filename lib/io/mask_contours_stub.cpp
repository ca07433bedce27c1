// Contours when the build has no ITK (MEDSEG_WITH_ITK=OFF): the call explains why it fails.
#ifndef MEDSEG_WITH_ITK
#include "core/error.h"
#include "io/mask_contours.h"

namespace medseg::io {

bool mask_contours_available() { return false; }
std::vector<Contour> mask_contours(const uint8_t*, int64_t, int64_t) {
  throw Error("this medseg build has no contour extraction (configured with -DMEDSEG_WITH_ITK=OFF)");
}

}  // namespace medseg::io
#endif
