#pragma once
// nnU-Net's patch sampling (nnunetv2/training/dataloading/data_loader.py):
//  * sample j of a batch must contain foreground iff j >= round(batch_size * (1 - oversample));
//  * a forced sample picks a random label among those with stored locations, a random stored voxel
//    of it, and puts that voxel at the patch centre (lower corner clamped to the lowest allowed start);
//  * any other sample is a uniform random crop whose start may reach need_to_pad/2 outside the case,
//    need_to_pad = loader patch - final patch (grown when the case is smaller than the patch), so
//    augmented final patches cover the borders too;
//  * with an ignore label (partially annotated data), an unforced sample is centred on a random
//    annotated voxel instead (kAnnotatedClass), and a forced one picks among the foreground labels,
//    the annotated voxels only when the case has no foreground.
// 2D configurations use a pseudo-3D patch (1, y, x): one random slice.
#include <cstdint>

#include "data/case_source.h"
#include "data/rng.h"

namespace medseg::data {

// nnU-Net's rule for sample j: forced foreground iff j >= round(bs * (1 - oversample)) (Python
// round, half to even).
bool force_foreground(int64_t j, int64_t batch_size, double oversample);
// The share of a batch that rule forces: nnUNetTrainer_probabilisticOversampling's probability
// (0.5 for batch 2 at 0.33, 0.25 for batch 4).
double batch_tail_share(int64_t batch_size, double oversample);

// nnU-Net's get_patch_size(final_patch, rot, rot, rot, (0.85, 1.25)): the patch that still covers
// the final patch after any rotation up to `max_rotation` (radians, capped at 90 degrees) about each
// axis and down-scaling to 0.85. For dummy-2D the z extent stays the final one; for 2D (patch z == 1)
// only the in-plane rotation counts.
Shape3 initial_patch_size(const Shape3& final_patch, double max_rotation, bool dummy_2d, bool is_2d,
                          double min_scale = 0.85);

struct PatchChoice {
  Box box;
  int label = -1;  // the forced label, -1 for a random crop
};

class PatchSampler {
 public:
  // `patch`: what the loader crops; `final_patch`: what the network gets.
  PatchSampler(const Shape3& patch, const Shape3& final_patch);
  PatchChoice choose(const Shape3& case_shape, bool force_fg, const ClassLocations& locations, Rng& rng) const;
  const Shape3& patch() const { return patch_; }
  const Shape3& need_to_pad() const { return need_to_pad_; }

 private:
  Shape3 patch_, need_to_pad_;
};

}  // namespace medseg::data
