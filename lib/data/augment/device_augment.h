#pragma once
// nnU-Net's training augmentation on a collated batch with torch ops, on the training device
// (`augment_device cuda`) or on CPU tensors (`cpu_batched`: CI, tests). The loader workers keep
// sampling and cropping: they draw every per-sample decision with the CPU path's functions and in
// its order (draw.h) and hand over the whole loader patches; this applies, per sample with its own
// record: spatial (grid_sample on the planned read box, BG2's one-hot segmentation vote), noise
// (a generator seeded from the sample), blur (separable grouped convolutions, reflect padding),
// brightness, contrast, low resolution, inverted gamma, gamma, mirroring, image masking, -1 -> 0,
// and the deep-supervision targets. docs/gpu_augmentation.md has the design and the tolerances.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <optional>
#include <string>
#include <vector>

#include "data/augment/config.h"
#include "data/augment/deep_supervision.h"
#include "data/augment/draw.h"
#include "data/batch.h"

namespace medseg::data::augment {

struct DeviceAugmented {
  at::Tensor data;                 // (n, C, z, y, x) float32 on the device
  std::vector<at::Tensor> target;  // per deep-supervision scale (n, 1, ...) int16; one full-size without scales
};

// `in`: loader patches of the loader patch shape the pipeline was planned with; cfg.patch is the
// final patch. Batch tensors keep the pseudo-3D z axis (the caller drops it for 2D).
DeviceAugmented augment_on_device(const DeviceBatchInput& in, const AugmentConfig& cfg,
                                  const std::vector<Scale3>& ds_scales, const at::Device& device);

// A batch from a device-augmentation pipeline (Batch::device_input set) as the CPU path would
// have built it: data and targets on `device`, z dropped for 2D, keys and labels kept.
Batch augment_batch_on_device(Batch batch, const PipelineConfig& cfg, const at::Device& device);

// The device of the trainer's `augment_device` setting: nullopt for Cpu (per sample in the loader workers), the CPU
// for CpuBatched, `training` for Cuda, which must then be a CUDA device that is available. Throws Error with one
// line saying why otherwise.
std::optional<at::Device> resolve_augment_device(AugmentDevice setting, const at::Device& training);

}  // namespace medseg::data::augment
