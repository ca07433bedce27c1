#pragma once
// TIFF stacks kept as separate sample planes (see tiff_planes_itk.cpp). Internal to io/.
#include <string>

#include "core/volume.h"

namespace medseg::io {

// Reads every sample plane of the first page as one z slice, with geometry `g`. FileError naming the
// file for anything it cannot read.
Volume read_tiff_planes(const std::string& path, const Geometry& g);

}  // namespace medseg::io
