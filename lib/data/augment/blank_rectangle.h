#pragma once
// BG2 BlankRectangleTransform as DA5 uses it (p 0.4, after mirroring): each channel with p 0.5 gets
// 1..4 boxes, each edge uniform in [max(1, P // 10), P // 3) of the patch edge P and placed uniformly
// inside the patch; every box is filled with its own current mean (torch.mean), one after the other.
// A patch edge too short for that range (a 2D patch's z of 1, edges under 6 where nnU-Net's draw
// would fail) gets boxes of edge max(1, P // 10).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/grid.h"
#include "data/augment/config.h"
#include "data/rng.h"

namespace medseg::data::augment {

struct BlankRect {
  int64_t channel = 0;
  Box box;
};

std::vector<BlankRect> sample_blank_rectangles(const AugmentConfig& cfg, int64_t channels, Rng& rng);

// The boxes mirrored along `axes` of `patch` (the transform runs after mirroring in nnU-Net's order).
void reflect_rectangles(std::vector<BlankRect>& rects, const std::vector<int64_t>& axes, const Shape3& patch);

// data (C, z, y, x), in place.
void apply_blank_rectangles(at::Tensor& data, const std::vector<BlankRect>& rects);

}  // namespace medseg::data::augment
