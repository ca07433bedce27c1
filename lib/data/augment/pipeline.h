#pragma once
// nnU-Net's per-sample training augmentation, in its order: spatial (to the final patch), Rot90 / Transpose
// (DA5; axis_ops.h), the steps of AugmentConfig::order (config.h: noise ... gamma, mirror axes, DA5's local
// transforms), mirroring, image masking (use_mask_for_norm channels), and
// -1 -> 0 in the segmentation (the last three in one pass, finish.h). Deep-supervision targets are made per batch
// (deep_supervision.h). Validation runs finish_sample alone, with no axes and no masked channels (nnU-Net's validation
// transforms are RemoveLabel only).
// Every random draw comes from `rng` (decisions, parameters) and `gen` (noise voxels), so the
// result depends on the seeds alone.
#include <ATen/core/Generator.h>

#include <cstdint>
#include <vector>

#include "data/augment/config.h"
#include "data/augment/draw.h"
#include "data/augment/sample.h"
#include "data/rng.h"

namespace medseg::data::augment {

// The whole chain on a loader patch; returns new tensors (tests, callers that hold a loader patch).
Sample augment_training_sample(const Sample& loader_patch, const AugmentConfig& cfg, Rng& rng, at::Generator& gen);

// The same in steps, for a loader that reads only what the spatial transform needs and writes
// straight into its batch:
//   plan = plan_spatial(loader_shape, cfg.patch, sample_spatial(cfg, rng), cfg.in_plane());
//   read plan.read_box() of the loader patch into `region`;
//   Sample s = apply_spatial(region, plan);
//   ops = sample_axis_ops(cfg, rng); s = apply_axis_ops of s.data and s.seg;  // axis_ops.h
//   axes = augment_intensities(s, cfg, rng, gen);        // noise ... gamma, in place
//   finish_sample(s, axes, cfg.mask_channels, data_slot, seg_slot);  // finish.h
// augment_intensities modifies `s.data` in place and returns the drawn mirror axes.
std::vector<int64_t> augment_intensities(Sample& s, const AugmentConfig& cfg, Rng& rng, at::Generator& gen);

// The intensity transforms of a drawn record (draw.h), noise voxels from `gen`; in place.
void apply_intensities(Sample& s, const IntensityParams& p, at::Generator& gen);

}  // namespace medseg::data::augment
