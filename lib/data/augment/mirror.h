#pragma once
// BG2 MirrorTransform (always on in nnU-Net): each allowed spatial axis flipped with p 0.5, image
// and segmentation alike. The flip itself is part of finish_sample (finish.h).
#include <vector>

#include "data/augment/config.h"
#include "data/rng.h"

namespace medseg::data::augment {

std::vector<int64_t> sample_mirror_axes(const AugmentConfig& cfg, Rng& rng);  // spatial axes 0..2

}  // namespace medseg::data::augment
