#pragma once
// One training or validation batch: a pure function of (cases, pipeline, seed, epoch, index).
// Case choice, patch location and every augmentation draw come from counter-based seeds
// (rng.h), so any thread can build any batch and get the same tensors.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/augment/config.h"
#include "data/augment/deep_supervision.h"
#include "data/augment/draw.h"
#include "data/case_source.h"

namespace medseg::planning {
struct ConfigurationPlan;
}

namespace medseg::data {

struct PipelineConfig {
  Shape3 loader_patch{0, 0, 0};  // the box cropped from a case (nnU-Net's initial patch size)
  Shape3 final_patch{0, 0, 0};   // what the network sees
  int64_t batch_size = 2;
  double oversample = 0.33;  // oversample_foreground_percent
  // false: the last samples of the batch hold foreground (force_foreground); true: each sample with
  // probability `oversample`, drawn from its own seed (nnUNetTrainer_probabilisticOversampling).
  bool probabilistic_oversampling = false;
  bool augment = true;  // false: validation (crop, -1 -> 0, deep-supervision targets)
  augment::AugmentConfig aug;
  std::vector<augment::Scale3> ds_scales;  // empty: a single full-resolution target
  bool is_2d = false;                      // 2D configuration: batch tensors drop the z axis
  // Under data parallelism a rank builds only its share of the global batch, samples
  // [share_begin, share_end); the draws stay those of the global batch (same cases, patches,
  // augmentation and foreground rule as on one process). share_end < 0: the whole batch.
  int64_t share_begin = 0, share_end = -1;
  // Training augmentation on the collated batch (device_augment.h) instead of per sample in the
  // workers: build_batch then draws the same parameters but returns the un-augmented loader
  // patches in Batch::device_input. Ignored when `augment` is false (validation).
  bool device_augment = false;
};

// Rank `rank` of `ranks`'s contiguous share of a batch of `batch` samples: sizes differ by at most
// one, and the shares of all ranks tile [0, batch) in rank order.
struct BatchShare {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
BatchShare batch_share(int64_t batch, int rank, int ranks);

// nnUNetTrainerNoDA's training pipeline: nnU-Net's validation transforms on patches cropped at the
// final patch size (no enlarged loader patch, no augmentation), the sampling rule of `p` kept.
PipelineConfig without_augmentation(PipelineConfig p);

// Which of nnU-Net's training augmentations (its trainer variants' names in brackets).
struct AugmentChoice {
  bool da5 = false;                                 // nnUNetTrainerDA5's pipeline (AugmentConfig::da5)
  bool nearest_image = false, nearest_seg = false;  // spatial transform order 0 (*DAOrd0, *DASegOrd0, DA5*ord0)
  bool dummy_2d = true;                             // false: nnUNetTrainer_noDummy2DDA
};

// nnU-Net's training pipeline for a plan configuration: rotation +-30 deg in 3D, +-180 deg for
// dummy-2D (max(patch) / patch[0] > 3) and 2D, +-15 deg for 2D patches with aspect > 1.5; loader
// patch from initial_patch_size (DA5: with its smallest scale, 0.7); mirroring on all spatial axes;
// deep supervision from the strides.
PipelineConfig training_pipeline(const planning::ConfigurationPlan& plan, bool deep_supervision = true,
                                 double oversample = 0.33, const AugmentChoice& choice = {});
// The validation pipeline: loader patch = final patch, no augmentation.
PipelineConfig validation_pipeline(const planning::ConfigurationPlan& plan, bool deep_supervision = true,
                                   double oversample = 0.33);

struct Batch {
  int64_t epoch = 0, index = 0;
  at::Tensor data;                 // (B, C, z, y, x) float32; (B, C, y, x) for 2D
  std::vector<at::Tensor> target;  // per deep-supervision scale, (B, 1, ...) int16 (nnU-Net's dtype)
  std::vector<std::string> keys;   // case id per sample
  std::vector<int> forced_label;   // per sample: the label its patch was centred on, -1 if random
  // Set (and data / target left empty) by a device-augmentation pipeline: augment_on_device
  // (device_augment.h) turns it into data and target.
  std::optional<augment::DeviceBatchInput> device_input;
};

// Builds batch `index` of `epoch`. `pin_memory` is honoured when CUDA is available.
// Throws Error naming the case, epoch, batch and sample when reading or augmenting fails.
Batch build_batch(const CaseSource& cases, const PipelineConfig& cfg, uint64_t seed, int64_t epoch, int64_t index,
                  bool pin_memory = false);

}  // namespace medseg::data
