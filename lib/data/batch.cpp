#include "data/batch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include <torch/cuda.h>
#include "data/augment/cascade.h"
#include "data/augment/finish.h"
#include "data/augment/pipeline.h"
#include "data/augment/spatial.h"
#include "data/patch_sampler.h"
#include "data/rng.h"
#include "plans/plans.h"

namespace medseg::data {

namespace {

constexpr double kDeg = 3.14159265358979323846 / 180.0;

// Per-thread buffers for a sample's region read and spatial output, reused from sample to sample:
// fresh multi-megabyte tensors cost page faults (zeroed pages) on every sample. Nothing built on
// them leaves build_batch (finish_sample copies into the batch).
struct Scratch {
  std::vector<float> region_data, out_data;
  std::vector<int16_t> region_seg, out_seg, region_prev, out_prev;
};

template <class T>
at::Tensor view_of(std::vector<T>& buf, at::IntArrayRef sizes, at::ScalarType type) {
  int64_t n = 1;
  for (int64_t v : sizes) n *= v;
  if (buf.size() < static_cast<size_t>(n)) buf.resize(static_cast<size_t>(n));
  return at::from_blob(buf.data(), sizes, at::TensorOptions().dtype(type));
}

PipelineConfig base_pipeline(const planning::ConfigurationPlan& plan, bool deep_supervision, double oversample) {
  PipelineConfig cfg;
  const auto& ps = plan.patch_size;
  MEDSEG_CHECK(ps.size() == 2 || ps.size() == 3, "configuration '", plan.name,
               "': patch_size must have 2 or 3 entries");
  cfg.is_2d = ps.size() == 2;
  cfg.final_patch = cfg.is_2d ? Shape3{1, ps[0], ps[1]} : Shape3{ps[0], ps[1], ps[2]};
  cfg.loader_patch = cfg.final_patch;
  cfg.batch_size = plan.batch_size;
  cfg.oversample = oversample;
  if (deep_supervision) cfg.ds_scales = augment::deep_supervision_scales(plan.architecture.strides);
  auto& a = cfg.aug;
  a.patch = cfg.final_patch;
  a.is_2d = cfg.is_2d;
  for (size_t c = 0; c < plan.use_mask_for_norm.size(); ++c)
    if (plan.use_mask_for_norm[c]) a.mask_channels.push_back(static_cast<int>(c));
  return cfg;
}

// The previous stage's segmentation of `read`, through the sample's spatial transform (`plan`, when
// augmenting) like the reference segmentation: (final patch) int16 in the scratch buffers.
const int16_t* read_previous_stage(const CaseSource& cases, int64_t ci, const Box& read,
                                   const augment::SpatialPlan* plan, Scratch& scratch) {
  const Shape3 rs = read.shape();
  at::Tensor region = view_of(scratch.region_prev, {rs[0], rs[1], rs[2]}, at::kShort);
  cases.read_previous_stage(ci, read, region.data_ptr<int16_t>(), -1);
  if (!plan || !plan->active) return region.data_ptr<int16_t>();
  const Shape3& P = plan->map.patch;
  at::Tensor out = view_of(scratch.out_prev, {P[0], P[1], P[2]}, at::kShort);
  augment::resample(plan->map, nullptr, 0, region.data_ptr<int16_t>(), nullptr, out.data_ptr<int16_t>());
  return out.data_ptr<int16_t>();
}

// The spatial transform's plan and the Rot90/Transpose of one sample, drawn in the pipeline's order, and the part of
// the case the sample reads: the loader patch's box, narrowed to what the spatial transform touches.
struct SpatialDraw {
  augment::SpatialPlan plan;
  augment::AxisOps axis_ops;
  Box read;
};

SpatialDraw draw_spatial(const PipelineConfig& cfg, const Box& box, Rng& rng) {
  SpatialDraw d;
  d.read = box;
  if (!cfg.augment) return d;
  d.plan = augment::plan_spatial(cfg.loader_patch, cfg.final_patch, augment::sample_spatial(cfg.aug, rng),
                                 cfg.aug.in_plane());
  d.axis_ops = augment::sample_axis_ops(cfg.aug, rng);
  const Box part = d.plan.read_box();
  for (int a = 0; a < 3; ++a) {
    d.read.lo[a] = box.lo[a] + part.lo[a];
    d.read.hi[a] = box.lo[a] + part.hi[a];
  }
  return d;
}

// The cascade: the previous stage's segmentation takes the reference segmentation's path (spatial transform, Rot90 /
// Transpose, mirroring) and becomes one-hot channels at `onehot`, after the image's.
void add_previous_stage(const CaseSource& cases, const PipelineConfig& cfg, int64_t ci, const SpatialDraw& d,
                        const std::vector<int64_t>& mirror_axes, Scratch& scratch, Rng& rng, float* onehot) {
  const Shape3& P = cfg.final_patch;
  const std::vector<int>& labels = cases.previous_stage_labels();
  const int K = static_cast<int>(labels.size());
  const int16_t* prev = read_previous_stage(cases, ci, d.read, cfg.augment ? &d.plan : nullptr, scratch);
  at::Tensor turned;
  if (d.axis_ops.active()) {
    turned = augment::apply_axis_ops(at::from_blob(const_cast<int16_t*>(prev), {1, P[0], P[1], P[2]}, at::kShort),
                                     d.axis_ops);
    prev = turned.data_ptr<int16_t>();
  }
  augment::previous_stage_one_hot(prev, P, labels, mirror_axes, onehot);
  if (cfg.augment) augment::apply_cascade(augment::draw_cascade(K, cfg.aug, rng), onehot, K, P);
}

// The per-sample path: reads the part of the case the sample needs, augments it (spatial, Rot90 / Transpose,
// intensities, mirroring, masking) and writes the final patch into `data_out` / `seg_out`. `rng` continues the
// sample's draws; `noise_seed` seeds the intensity transforms' noise.
void augment_sample(const CaseSource& cases, const PipelineConfig& cfg, int64_t ci, const Box& box, Rng& rng,
                    uint64_t noise_seed, float* data_out, int16_t* seg_out) {
  const int64_t C = cases.channels();
  const Shape3& P = cfg.final_patch;
  at::Generator gen = at::detail::createCPUGenerator(noise_seed);
  // Plan the spatial transform first and read only the part of the loader patch it touches.
  const SpatialDraw d = draw_spatial(cfg, box, rng);
  const Shape3 rs = d.read.shape();
  thread_local Scratch scratch;
  augment::Sample s;
  s.data = view_of(scratch.region_data, {C, rs[0], rs[1], rs[2]}, at::kFloat);
  s.seg = view_of(scratch.region_seg, {1, rs[0], rs[1], rs[2]}, at::kShort);
  cases.read_data(ci, d.read, s.data.data_ptr<float>(), 0.f);
  cases.read_seg(ci, d.read, s.seg.data_ptr<int16_t>(), -1);
  std::vector<int64_t> mirror_axes;
  std::vector<int> mask_channels;
  if (cfg.augment) {
    if (d.plan.active) {
      augment::Sample into{view_of(scratch.out_data, {C, P[0], P[1], P[2]}, at::kFloat),
                           view_of(scratch.out_seg, {1, P[0], P[1], P[2]}, at::kShort)};
      s = augment::apply_spatial(s, d.plan, &into);
    }
    s = {augment::apply_axis_ops(s.data, d.axis_ops), augment::apply_axis_ops(s.seg, d.axis_ops)};
    mirror_axes = augment::augment_intensities(s, cfg.aug, rng, gen);
    mask_channels = cfg.aug.mask_channels;
  }
  augment::finish_sample(s, mirror_axes, mask_channels, data_out, seg_out);
  if (!cases.previous_stage_labels().empty())
    add_previous_stage(cases, cfg, ci, d, mirror_axes, scratch, rng, data_out + C * P[0] * P[1] * P[2]);
}

// The collated batch as the trainer takes it: targets at the deep-supervision scales, pinned when asked, and a 2D
// configuration's pseudo-3D axis dropped.
Batch finish_batch(Batch out, const at::Tensor& data, const at::Tensor& seg, const PipelineConfig& cfg, bool pin) {
  out.target = cfg.ds_scales.empty() ? std::vector<at::Tensor>{seg} : augment::downsample_targets(seg, cfg.ds_scales);
  for (auto& t : out.target)
    if (pin && !t.is_pinned()) t = t.pin_memory();
  out.data = data;
  if (cfg.is_2d) {
    out.data = out.data.squeeze(2);
    for (auto& t : out.target) t = t.squeeze(2);
  }
  return out;
}

}  // namespace

PipelineConfig training_pipeline(const planning::ConfigurationPlan& plan, bool deep_supervision, double oversample,
                                 const AugmentChoice& choice) {
  PipelineConfig cfg = base_pipeline(plan, deep_supervision, oversample);
  auto& a = cfg.aug;
  const auto& p = cfg.final_patch;
  if (cfg.is_2d) {
    const double aspect = static_cast<double>(std::max(p[1], p[2])) / static_cast<double>(std::min(p[1], p[2]));
    a.rotation_max = (aspect > 1.5 ? 15.0 : 180.0) * kDeg;
    a.mirror_axes = {1, 2};
  } else {
    a.dummy_2d =
        choice.dummy_2d && static_cast<double>(*std::max_element(p.begin(), p.end())) / static_cast<double>(p[0]) > 3.0;
    a.rotation_max = (a.dummy_2d ? 180.0 : 30.0) * kDeg;
    a.mirror_axes = {0, 1, 2};
  }
  if (choice.da5) a.da5();
  a.nearest_image = choice.nearest_image;
  a.nearest_seg = choice.nearest_seg;
  // get_patch_size's scale range: (0.85, 1.25) in nnU-Net's trainer, (0.7, 1.43) in DA5's.
  cfg.loader_patch = initial_patch_size(p, a.rotation_max, a.dummy_2d, cfg.is_2d, choice.da5 ? 0.7 : 0.85);
  return cfg;
}

PipelineConfig validation_pipeline(const planning::ConfigurationPlan& plan, bool deep_supervision, double oversample) {
  PipelineConfig cfg = base_pipeline(plan, deep_supervision, oversample);
  cfg.augment = false;
  cfg.aug.disabled();
  return cfg;
}

PipelineConfig without_augmentation(PipelineConfig p) {
  p.augment = false;
  p.aug.disabled();
  p.loader_patch = p.final_patch;
  return p;
}

BatchShare batch_share(int64_t batch, int rank, int ranks) {
  MEDSEG_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, "batch_share: rank ", rank, " of ", ranks);
  return {batch * rank / ranks, batch * (rank + 1) / ranks};
}

Batch build_batch(const CaseSource& cases, const PipelineConfig& cfg, uint64_t seed, int64_t epoch, int64_t index,
                  bool pin_memory) {
  MEDSEG_CHECK(cases.size() != 0, "data loader: no cases to sample from");
  // Pinned host memory makes the trainer's host-to-device copies asynchronous; it needs CUDA.
  const bool pin = pin_memory && torch::cuda::is_available();
  const int64_t B = cfg.batch_size, C = cases.channels();
  // Cascade: one-hot channels of the previous stage's segmentation follow the image channels.
  const auto K = static_cast<int64_t>(cases.previous_stage_labels().size());
  const int64_t first = cfg.share_end < 0 ? 0 : cfg.share_begin, last = cfg.share_end < 0 ? B : cfg.share_end;
  MEDSEG_CHECK(first >= 0 && last <= B && first < last, "data loader: share [", first, ", ", last, ") of a batch of ",
               B);
  const uint64_t bseed = batch_seed(seed, epoch, index);
  Rng batch_rng(bseed);
  Batch out;
  out.epoch = epoch;
  out.index = index;
  std::vector<int64_t> picks;  // cases drawn with replacement, like nnU-Net's DataLoader
  for (int64_t j = 0; j < B; ++j) picks.push_back(batch_rng.randint(0, cases.size() - 1));

  // The device path collates whole loader patches (fixed size) and augments them later.
  const bool on_device = cfg.augment && cfg.device_augment;
  MEDSEG_CHECK(!on_device || K == 0,
               "data loader: device augmentation does not carry a cascade's previous-stage channels; "
               "train the cascade with augmentation in the loader workers");
  const Shape3& S = on_device ? cfg.loader_patch : cfg.final_patch;
  const int64_t n = last - first;
  at::Tensor data = at::empty({n, C + K, S[0], S[1], S[2]}, at::TensorOptions().dtype(at::kFloat).pinned_memory(pin));
  at::Tensor seg = at::empty({n, 1, S[0], S[1], S[2]}, at::TensorOptions().dtype(at::kShort).pinned_memory(pin));
  std::vector<augment::SampleDraw> draws;
  const PatchSampler sampler(cfg.loader_patch, cfg.final_patch);
  for (int64_t j = first; j < last; ++j) {
    const int64_t ci = picks[static_cast<size_t>(j)];
    out.keys.push_back(cases.id(ci));
    try {
      const uint64_t sseed = sample_seed(bseed, j);
      Rng rng(sseed);
      const uint64_t noise_seed = mix64(sseed ^ 0x6e6f697365ULL);
      const bool force =
          cfg.probabilistic_oversampling ? rng.bernoulli(cfg.oversample) : force_foreground(j, B, cfg.oversample);
      const auto choice = sampler.choose(cases.shape(ci), force, cases.class_locations(ci), rng);
      out.forced_label.push_back(choice.label);
      float* data_out = data[j - first].data_ptr<float>();
      int16_t* seg_out = seg[j - first].data_ptr<int16_t>();
      if (!on_device) {
        augment_sample(cases, cfg, ci, choice.box, rng, noise_seed, data_out, seg_out);
        continue;
      }
      draws.push_back(augment::draw_sample(cfg.aug, C, rng, noise_seed));  // the per-sample path's draws, in order
      cases.read_data(ci, choice.box, data_out, 0.f);
      cases.read_seg(ci, choice.box, seg_out, -1);
    } catch (const std::exception& e) {
      throw Error(concat("data loader: case '", cases.id(ci), "' (epoch ", epoch, ", batch ", index, ", sample ", j,
                         "): ", one_line(e.what())));
    }
  }
  if (!on_device) return finish_batch(std::move(out), data, seg, cfg, pin);
  out.device_input = augment::DeviceBatchInput{data, seg, std::move(draws)};
  return out;
}

}  // namespace medseg::data
