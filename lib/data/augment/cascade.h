#pragma once
// The cascade's extra inputs (nnU-Net's 3d_cascade_fullres): the previous stage's segmentation,
// carried through the spatial transform and mirroring like the reference segmentation, then
//   MoveSegAsOneHotToData: one channel per foreground label appended to the image (1 where the
//     previous stage predicted that label; -1 padding and background are 0 everywhere),
// and, in training, the two transforms that teach the network to distrust the previous stage:
//   ApplyRandomBinaryOperatorTransform (p 0.4): every one-hot channel, in random order, dilated,
//     eroded, opened or closed with a ball of radius U(1, 8); voxels a channel gains are taken from
//     the other channels (morphology.h),
//   RemoveRandomConnectedComponentFromOneHotEncodingTransform (p 0.2): every channel, in random
//     order, loses one random connected component (26-connected) among those smaller than 15 % of
//     the patch.
// Parameters are drawn up front from the sample's Rng, after nnU-Net's other draws.
#include <cstdint>
#include <vector>

#include "core/grid.h"
#include "data/augment/config.h"
#include "data/augment/morphology.h"
#include "data/rng.h"

namespace medseg::data::augment {

struct CascadeParams {
  struct Morph {
    int channel = 0;
    BinaryOp op = BinaryOp::Dilation;
    double radius = 1.0;
  };
  struct Removal {
    int channel = 0;
    double pick = 0.0;  // U[0, 1): which of the eligible components (by raster order of the first voxel)
  };
  std::vector<Morph> morph;      // in application order; empty when the transform was not drawn
  std::vector<Removal> removal;  // likewise
};

// nnU-Net's cascade constants (the probabilities are AugmentConfig's p_cascade_morph / _removal).
inline constexpr double kCascadeRadiusLo = 1.0, kCascadeRadiusHi = 8.0;
inline constexpr double kCascadeRemovalMaxFraction = 0.15;

CascadeParams draw_cascade(int channels, const AugmentConfig& cfg, Rng& rng);

// One-hot of `seg` (z, y, x, `shape`) for `labels`, mirrored along `mirror_axes` (0..2) as the
// image is: `out` holds labels.size() channels of shape `shape`, float 0/1.
void previous_stage_one_hot(const int16_t* seg, const Shape3& shape, const std::vector<int>& labels,
                            const std::vector<int64_t>& mirror_axes, float* out);

// Applies drawn parameters to the one-hot channels `onehot` (channels x shape, 0/1), in place.
void apply_cascade(const CascadeParams& p, float* onehot, int channels, const Shape3& shape);

}  // namespace medseg::data::augment
