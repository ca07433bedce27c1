// A build without cairo (MEDSEG_WITH_CAIRO=OFF, e.g. on a GPU node without the library) cannot draw
// overlays; asking for them is an error the CLIs report in one line.
#include "visualization/overlay.h"

#include "core/error.h"

namespace medseg::visualization {

bool overlays_available() { return false; }

void write_overlay(const std::string& png_path, const OverlayInput&) {
  throw Error("cannot draw " + png_path + ": this build of medseg has no cairo (MEDSEG_WITH_CAIRO=OFF)");
}

}  // namespace medseg::visualization
