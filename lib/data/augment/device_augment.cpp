#include "data/augment/device_augment.h"

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <string>

#include "core/error.h"
#include "data/augment/device_ops.h"

namespace medseg::data::augment {

namespace {

// finish.h's steps on the batch: the drawn mirror axes per sample, then masking (channels of
// use_mask_for_norm set to 0 where seg < 0), then -1 -> 0.
void finish(at::Tensor& data, at::Tensor& seg, const std::vector<SampleDraw>& draws, const std::vector<int>& mask) {
  for (size_t b = 0; b < draws.size(); ++b) {
    const std::vector<int64_t>& axes = draws[b].intensity.mirror_axes;
    if (axes.empty()) continue;
    std::vector<int64_t> dims;
    for (int64_t a : axes) {
      MEDSEG_CHECK(a >= 0 && a <= 2, "device augmentation: mirror axis ", a);
      dims.push_back(a + 1);
    }
    const auto i = static_cast<int64_t>(b);
    data[i].copy_(data[i].flip(dims));
    seg[i].copy_(seg[i].flip(dims));
  }
  const at::Tensor outside = seg.lt(0);  // (B, 1, ...)
  for (int c : mask)
    if (c >= 0 && c < data.size(1)) data.select(1, c).masked_fill_(outside.select(1, 0), 0.f);
  seg.masked_fill_(seg.eq(-1), 0);
}

}  // namespace

DeviceAugmented augment_on_device(const DeviceBatchInput& in, const AugmentConfig& cfg,
                                  const std::vector<Scale3>& ds_scales, const at::Device& device) {
  const int64_t n = in.data.size(0);
  MEDSEG_CHECK(
      in.data.dim() == 5 && in.seg.dim() == 5 && in.seg.size(0) == n && static_cast<int64_t>(in.draws.size()) == n,
      "device augmentation: expected (n, C, z, y, x) patches, (n, 1, z, y, x) labels and n records");
  at::NoGradGuard no_grad;
  const at::Tensor data = in.data.to(device, /*non_blocking=*/true), seg = in.seg.to(device, true);
  std::vector<at::Tensor> images, labels;
  for (int64_t b = 0; b < n; ++b) {
    const SampleDraw& d = in.draws[static_cast<size_t>(b)];
    Sample s = device::spatial(data[b], seg[b], d.spatial, cfg);
    images.push_back(apply_axis_ops(s.data, d.axes));
    labels.push_back(apply_axis_ops(s.seg, d.axes));
  }
  DeviceAugmented out;
  out.data = at::stack(images);  // contiguous, the batch's own memory
  at::Tensor target = at::stack(labels);
  device::intensities(out.data, in.draws);
  finish(out.data, target, in.draws, cfg.mask_channels);
  out.target = ds_scales.empty() ? std::vector<at::Tensor>{target} : downsample_targets(target, ds_scales);
  return out;
}

Batch augment_batch_on_device(Batch batch, const PipelineConfig& cfg, const at::Device& device) {
  MEDSEG_CHECK(batch.device_input, "device augmentation: the batch carries no loader patches");
  DeviceAugmented a = augment_on_device(*batch.device_input, cfg.aug, cfg.ds_scales, device);
  batch.device_input.reset();
  batch.data = a.data;
  batch.target = std::move(a.target);
  if (cfg.is_2d) {
    batch.data = batch.data.squeeze(2);
    for (auto& t : batch.target) t = t.squeeze(2);
  }
  return batch;
}

std::optional<at::Device> resolve_augment_device(AugmentDevice setting, const at::Device& training) {
  if (setting == AugmentDevice::Cpu) return std::nullopt;
  if (setting == AugmentDevice::CpuBatched) return at::Device(at::kCPU);
  MEDSEG_CHECK(torch::cuda::is_available(),
               "augment_device cuda: CUDA is not available in this build/machine (use augment_device cpu)");
  MEDSEG_CHECK(training.is_cuda(),
               "augment_device cuda needs training on a CUDA device (--device cuda); training runs on ",
               training.str());
  return training;
}

}  // namespace medseg::data::augment
