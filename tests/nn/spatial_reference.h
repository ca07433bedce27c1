#pragma once
// Reference (grid_sample) implementation of the spatial transform, for tests only.
#include "data/augment/spatial.h"

namespace medseg::data::augment {

Sample reference_spatial(const Sample& in, const Shape3& patch, const SpatialParams& p, bool in_plane);

}  // namespace medseg::data::augment
