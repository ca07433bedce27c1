// The batched augmentation path (data/augment/device_augment.h) on CPU tensors, against the CPU
// per-sample path (build_batch without device_augment) and against facts that do not come from
// either: without noise the two paths must agree (images to rounding, labels exactly); with noise
// on, independent streams must follow the same distributions (rotation / scaling rates, angles,
// intensity moments, label fractions, noise std on a constant image); deep-supervision targets are
// nearest-exact resizes; the setting refuses CUDA where there is none.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/augment/device_augment.h"
#include "data/batch.h"
#include "data/data_loader.h"
#include "data/patch_sampler.h"
#include "bench_support/synthetic_cases.h"
#include "training/trainer_config.h"

using namespace medseg;
using namespace medseg::data;
using namespace medseg::data::augment;

namespace {

constexpr double kDevicePi = 3.14159265358979323846;

// A training pipeline as training_pipeline builds one from a plan: rotation range, dummy-2D,
// mirror axes and loader patch from the final patch; two deep-supervision scales below full.
PipelineConfig pipeline(const Shape3& patch, bool is_2d, int64_t batch) {
  PipelineConfig cfg;
  cfg.final_patch = patch;
  cfg.batch_size = batch;
  cfg.is_2d = is_2d;
  AugmentConfig& a = cfg.aug;
  a.patch = patch;
  a.is_2d = is_2d;
  if (is_2d) {
    a.rotation_max = kDevicePi;
    a.mirror_axes = {1, 2};
    cfg.ds_scales = {{1, 1, 1}, {1, 0.5, 0.5}, {1, 0.25, 0.25}};
  } else {
    a.dummy_2d = static_cast<double>(std::max({patch[0], patch[1], patch[2]})) / static_cast<double>(patch[0]) > 3;
    a.rotation_max = (a.dummy_2d ? kDevicePi : kDevicePi / 6);
    cfg.ds_scales = {{1, 1, 1}, {a.dummy_2d ? 1 : 0.5, 0.5, 0.5}, {a.dummy_2d ? 1 : 0.25, 0.25, 0.25}};
  }
  cfg.loader_patch = initial_patch_size(patch, a.rotation_max, a.dummy_2d, is_2d);
  return cfg;
}

// Every transform fires on every sample (mirror half the time), channel 0 masked.
PipelineConfig all_on(PipelineConfig cfg) {
  AugmentConfig& a = cfg.aug;
  a.p_rotation = a.p_scaling = a.p_blur = a.p_brightness = a.p_contrast = a.p_lowres = 1;
  a.p_gamma_inverted = a.p_gamma = 1;
  a.mask_channels = {0};
  return cfg;
}

Batch cpu_batch(const CaseSource& src, PipelineConfig cfg, uint64_t seed, int64_t index) {
  cfg.device_augment = false;
  return build_batch(src, cfg, seed, 0, index);
}

Batch device_batch(const CaseSource& src, PipelineConfig cfg, uint64_t seed, int64_t index) {
  cfg.device_augment = true;
  Batch b = build_batch(src, cfg, seed, 0, index);
  EXPECT_TRUE(b.device_input.has_value());
  EXPECT_FALSE(b.data.defined()) << "the device path's workers leave the augmentation to augment_on_device";
  return augment_batch_on_device(std::move(b), cfg, at::kCPU);
}

std::shared_ptr<InMemoryCaseSource> cases(int64_t channels, const Shape3& lo, const Shape3& hi) {
  return bench::make_synthetic_source(5, lo, hi, channels, 3, 17);
}

struct Diff {
  double image = 0;    // largest |a - b| / max(1, |b|)
  int64_t labels = 0;  // differing label voxels over all scales
  int64_t voxels = 0;
};

void compare(const Batch& dev, const Batch& cpu, Diff& d) {
  ASSERT_EQ(dev.data.sizes(), cpu.data.sizes());
  ASSERT_EQ(dev.target.size(), cpu.target.size());
  const at::Tensor rel = (dev.data - cpu.data).abs() / cpu.data.abs().clamp_min(1.0);
  d.image = std::max(d.image, rel.max().item<double>());
  for (size_t k = 0; k < cpu.target.size(); ++k) {
    ASSERT_EQ(dev.target[k].sizes(), cpu.target[k].sizes()) << "scale " << k;
    ASSERT_EQ(dev.target[k].scalar_type(), at::kShort);
    d.labels += dev.target[k].ne(cpu.target[k]).sum().item<int64_t>();
    d.voxels += cpu.target[k].numel();
  }
  EXPECT_EQ(dev.keys, cpu.keys);
  EXPECT_EQ(dev.forced_label, cpu.forced_label);
}

// Images: the spatial transform and the noise are the CPU path's arithmetic; blur (convolution vs
// a serial sum), gamma (vectorised pow vs std::pow in the tail) and the statistics (reduction
// order) round differently: a few float ulps, far inside 1e-4 relative. Labels: exactly.
void expect_paths_agree(const CaseSource& src, const PipelineConfig& cfg, int batches, const std::string& what) {
  Diff d;
  for (int i = 0; i < batches; ++i) {
    compare(device_batch(src, cfg, 99, i), cpu_batch(src, cfg, 99, i), d);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_LE(d.image, 1e-4) << what;
  std::cout << what << ": largest relative image difference " << d.image << "\n";
  EXPECT_EQ(d.labels, 0) << what << ": " << d.labels << " of " << d.voxels << " label voxels differ";
}

}  // namespace

TEST(DeviceAugment, EqualsTheCpuPathWithoutNoise3D) {
  const auto src = cases(2, {20, 24, 24}, {24, 28, 30});
  PipelineConfig cfg = pipeline({12, 16, 14}, false, 4);
  cfg.aug.p_noise = 0;
  expect_paths_agree(*src, cfg, 8, "nnU-Net's probabilities");
  expect_paths_agree(*src, all_on(cfg), 6, "every transform");
}

TEST(DeviceAugment, EqualsTheCpuPathWithoutNoiseDummy2DAnd2D) {
  const auto src = cases(2, {10, 30, 32}, {12, 34, 36});
  PipelineConfig d2 = pipeline({3, 18, 20}, false, 3);
  ASSERT_TRUE(d2.aug.dummy_2d);
  d2.aug.p_noise = 0;
  expect_paths_agree(*src, all_on(d2), 4, "dummy-2D");
  PipelineConfig two = pipeline({1, 18, 20}, true, 3);
  two.aug.p_noise = 0;
  expect_paths_agree(*src, all_on(two), 4, "2D");
  const Batch b = device_batch(*src, two, 5, 0);
  EXPECT_EQ(b.data.dim(), 4) << "2D batches drop z";
}

// DA5 (every step but local gamma on every sample; local gamma at its own rate, then on every sample) and the
// order-0 spatial transform: the batched path runs
// the CPU path's functions per sample for DA5's own steps, so the two agree as above.
TEST(DeviceAugment, EqualsTheCpuPathWithoutNoiseDA5AndNearest) {
  const auto src = cases(2, {20, 24, 24}, {24, 28, 30});
  auto da5 = [](PipelineConfig cfg) {
    AugmentConfig& a = cfg.aug;
    a.da5();
    a.p_noise = 0;
    a.p_rotation = a.p_scaling = a.p_rot90 = a.p_transpose = a.p_smoothing = a.p_additive_brightness = 1;
    a.p_contrast = a.p_lowres = a.p_gamma_inverted = a.p_gamma = a.p_blank = a.p_gradient = a.p_sharpen = 1;
    a.mask_channels = {0};
    cfg.loader_patch = initial_patch_size(cfg.final_patch, a.rotation_max, a.dummy_2d, cfg.is_2d, 0.7);
    return cfg;
  };
  expect_paths_agree(*src, da5(pipeline({12, 14, 14}, false, 4)), 6, "DA5 3D");
  PipelineConfig nearest = da5(pipeline({12, 14, 14}, false, 4));
  nearest.aug.nearest_image = nearest.aug.nearest_seg = true;
  expect_paths_agree(*src, nearest, 4, "DA5 order 0");
  const auto flat = cases(2, {10, 30, 32}, {12, 34, 36});
  expect_paths_agree(*flat, da5(pipeline({3, 18, 18}, false, 3)), 4, "DA5 dummy-2D");
  expect_paths_agree(*flat, da5(pipeline({1, 18, 18}, true, 3)), 4, "DA5 2D");
  PipelineConfig gamma = da5(pipeline({12, 14, 14}, false, 2));
  // Local gamma on every sample too (above it fires at DA5's 0.3): n^gamma magnifies rounding near a channel's
  // minimum, so it gets a run of its own.
  gamma.aug.p_local_gamma = 1;
  expect_paths_agree(*src, gamma, 2, "DA5 with local gamma");
}

// On CPU tensors the noise generator is the CPU path's (same seed, same shape): even the noise
// matches, which makes the device path's batches reproducible run to run.
TEST(DeviceAugment, WithNoiseOnCpuTensorsTheBatchesAreTheCpuPaths) {
  const auto src = cases(1, {20, 24, 24}, {24, 28, 30});
  PipelineConfig cfg = all_on(pipeline({12, 16, 14}, false, 2));
  cfg.aug.p_noise = 1;
  expect_paths_agree(*src, cfg, 3, "noise on");
  const Batch a = device_batch(*src, cfg, 3, 1), b = device_batch(*src, cfg, 3, 1);
  EXPECT_TRUE(a.data.equal(b.data));
}

namespace {

// Mean and standard error of a list of per-sample values.
struct Moments {
  double mean = 0, se = 0;
};
Moments moments(const std::vector<double>& v) {
  double s = 0, ss = 0;
  for (double x : v) s += x;
  const double m = s / static_cast<double>(v.size());
  for (double x : v) ss += (x - m) * (x - m);
  return {m, std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()))};
}

// Two independent samples of the same distribution: means within 4.5 standard errors of the
// difference (a false alarm about once in 150,000 comparisons).
void expect_same_mean(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
  const Moments ma = moments(a), mb = moments(b);
  EXPECT_LE(std::abs(ma.mean - mb.mean), 4.5 * std::sqrt(ma.se * ma.se + mb.se * mb.se) + 1e-9)
      << what << ": " << ma.mean << " vs " << mb.mean;
}

struct Stats {
  std::vector<double> mean, sd;
  std::vector<std::vector<double>> fraction{4};  // labels 0..3
};
void collect(const Batch& b, Stats& s) {
  for (int64_t j = 0; j < b.data.size(0); ++j) {
    const at::Tensor x = b.data[j][0].to(at::kDouble);
    s.mean.push_back(x.mean().item<double>());
    s.sd.push_back(x.std().item<double>());
    const at::Tensor y = b.target[0][j];
    for (int l = 0; l < 4; ++l)
      s.fraction[static_cast<size_t>(l)].push_back(y.eq(l).to(at::kDouble).mean().item<double>());
  }
}

}  // namespace

TEST(DeviceAugment, RotationAndScalingRatesAndRangesFollowTheConfig) {
  const auto src = cases(1, {12, 12, 12}, {14, 14, 14});
  PipelineConfig cfg = pipeline({6, 6, 6}, false, 8);
  cfg.device_augment = true;
  const int batches = 150;  // 1200 samples
  int64_t n = 0, rotated = 0, scaled = 0;
  std::vector<double> angles, scales;
  for (int i = 0; i < batches; ++i) {
    const Batch b = build_batch(*src, cfg, 7, 0, i);
    for (const SampleDraw& d : b.device_input->draws) {
      ++n;
      rotated += d.spatial.rotate;
      scaled += d.spatial.scale;
      if (d.spatial.rotate) angles.insert(angles.end(), d.spatial.angles.begin(), d.spatial.angles.end());
      if (d.spatial.scale) scales.push_back(d.spatial.scales[0]);
    }
  }
  // Binomial(1200, 0.2): mean 240, sd 13.9; 4.5 sd.
  const double sd = std::sqrt(n * 0.2 * 0.8);
  EXPECT_NEAR(static_cast<double>(rotated), 0.2 * n, 4.5 * sd);
  EXPECT_NEAR(static_cast<double>(scaled), 0.2 * n, 4.5 * sd);
  // U(-30, 30) degrees: mean 0, sd 30 / sqrt(3); U(0.7, 1.4): mean 1.05, sd 0.7 / sqrt(12).
  const double amax = kDevicePi / 6;
  for (double a : angles) ASSERT_LE(std::abs(a), amax);
  for (double s : scales) ASSERT_TRUE(s >= 0.7 && s <= 1.4) << s;
  const Moments ma = moments(angles), ms = moments(scales);
  EXPECT_NEAR(ma.mean, 0.0, 4.5 * amax / std::sqrt(3.0) / std::sqrt(static_cast<double>(angles.size())));
  EXPECT_NEAR(ms.mean, 1.05, 4.5 * 0.7 / std::sqrt(12.0) / std::sqrt(static_cast<double>(scales.size())));
  EXPECT_NEAR(ma.se * std::sqrt(static_cast<double>(angles.size())), amax / std::sqrt(3.0),
              0.1 * amax / std::sqrt(3.0));
}

// Noise on, nnU-Net's probabilities: the device path (seed 1) and the CPU path (seed 2) are
// independent samples of one distribution. Per-sample image mean and std and label fractions must
// agree in the mean (4.5 standard errors of the difference).
TEST(DeviceAugment, IntensityMomentsAndLabelFractionsFollowTheCpuPath) {
  const auto src = cases(1, {14, 16, 16}, {16, 18, 20});
  const PipelineConfig cfg = pipeline({8, 10, 10}, false, 8);
  Stats dev, cpu;
  for (int i = 0; i < 50; ++i) {  // 400 samples each
    collect(device_batch(*src, cfg, 1, i), dev);
    collect(cpu_batch(*src, cfg, 2, i), cpu);
  }
  expect_same_mean(dev.mean, cpu.mean, "image mean");
  expect_same_mean(dev.sd, cpu.sd, "image std");
  for (size_t l = 0; l < 4; ++l)
    expect_same_mean(dev.fraction[l], cpu.fraction[l], "fraction of label " + std::to_string(l));
}

// A constant image with only noise on: each sample's std is its drawn std (relative standard error
// of a std over n voxels: 1 / sqrt(2 (n - 1))), its mean stays 1.
TEST(DeviceAugment, NoiseStdOnAConstantImageIsTheDrawnStd) {
  auto src = std::make_shared<InMemoryCaseSource>();
  InMemoryCase c;
  c.id = "flat";
  c.shape = {20, 20, 20};
  c.data.assign(8000, 1.f);
  c.seg.assign(8000, 0);
  src->add(c);
  PipelineConfig cfg = pipeline({16, 16, 16}, false, 4);
  cfg.aug.disabled();
  cfg.aug.p_noise = 1;
  cfg.device_augment = true;
  cfg.loader_patch = cfg.final_patch;  // no spatial transform: crops then lie inside the case (no 0 padding)
  const double n = 16 * 16 * 16, rel_se = 1 / std::sqrt(2 * (n - 1));
  int checked = 0;
  for (int i = 0; i < 10; ++i) {
    Batch b = build_batch(*src, cfg, 11, 0, i);
    const std::vector<SampleDraw> draws = b.device_input->draws;
    b = augment_batch_on_device(std::move(b), cfg, at::kCPU);
    for (size_t j = 0; j < draws.size(); ++j) {
      const double want = draws[j].intensity.noise_std;
      ASSERT_TRUE(draws[j].intensity.noise);
      const at::Tensor x = b.data[static_cast<int64_t>(j)].to(at::kDouble);
      EXPECT_NEAR(x.std().item<double>(), want, 4.5 * rel_se * want + 1e-7) << "sample " << j;
      EXPECT_NEAR(x.mean().item<double>(), 1.0, 4.5 * want / std::sqrt(n) + 1e-6);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 40);
}

// Target k is the full-resolution target resized to round(S * scale) by nearest-exact: output
// index i reads input min(floor((i + 0.5) * in / out), in - 1), written out here per axis.
TEST(DeviceAugment, DeepSupervisionTargetsAreNearestExactResizes) {
  const auto src = cases(1, {20, 24, 24}, {24, 28, 30});
  const PipelineConfig cfg = all_on(pipeline({12, 16, 14}, false, 2));
  const Batch b = device_batch(*src, cfg, 4, 0);
  ASSERT_EQ(b.target.size(), 3u);
  const at::Tensor full = b.target[0];
  EXPECT_EQ(full.sizes(), at::IntArrayRef({2, 1, 12, 16, 14}));
  EXPECT_EQ(b.target[1].sizes(), at::IntArrayRef({2, 1, 6, 8, 7}));
  EXPECT_EQ(b.target[2].sizes(), at::IntArrayRef({2, 1, 3, 4, 4}));  // round(3.5) = 4 (half to even)
  EXPECT_GE(full.min().item<int>(), 0) << "-1 was removed";
  for (size_t k = 1; k < 3; ++k) {
    const at::Tensor t = b.target[k];
    auto src_index = [](int64_t i, int64_t in, int64_t out) {
      const float scale = static_cast<float>(in) / static_cast<float>(out);
      return std::min(static_cast<int64_t>(std::floor((static_cast<float>(i) + 0.5f) * scale)), in - 1);
    };
    for (int64_t z = 0; z < t.size(2); ++z)
      for (int64_t y = 0; y < t.size(3); ++y)
        for (int64_t x = 0; x < t.size(4); ++x)
          for (int64_t j = 0; j < 2; ++j)
            ASSERT_EQ(t[j][0][z][y][x].item<int16_t>(),
                      full[j][0][src_index(z, 12, t.size(2))][src_index(y, 16, t.size(3))][src_index(x, 14, t.size(4))]
                          .item<int16_t>())
                << "scale " << k;
  }
  const Batch cpu = cpu_batch(*src, cfg, 4, 0);
  for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(b.target[k].equal(cpu.target[k])) << "scale " << k;
}

TEST(DeviceAugment, TheSettingNamesTheDeviceAndRefusesMissingCuda) {
  EXPECT_FALSE(resolve_augment_device(AugmentDevice::Cpu, at::kCPU).has_value());
  EXPECT_EQ(*resolve_augment_device(AugmentDevice::CpuBatched, at::kCPU), at::Device(at::kCPU));
  if (!torch::cuda::is_available()) {
    try {
      resolve_augment_device(AugmentDevice::Cuda, at::kCPU);
      ADD_FAILURE() << "augment_device cuda without CUDA must fail";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("augment_device cuda"), std::string::npos) << msg;
      EXPECT_NE(msg.find("CUDA is not available"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  } else {
    EXPECT_THROW(resolve_augment_device(AugmentDevice::Cuda, at::kCPU), Error)
        << "the batch must live where the network does";
  }
  // The trainer config key: the three values, nothing else.
  EXPECT_EQ(training::trainer_config_from_json({{"augment_device", "cpu_batched"}}, "t.json").augment_device,
            AugmentDevice::CpuBatched);
  const training::TrainerConfig defaults;
  EXPECT_EQ(defaults.augment_device, AugmentDevice::Cpu);
  EXPECT_EQ(defaults.to_json().at("augment_device"), "cpu");
  EXPECT_THROW(training::trainer_config_from_json({{"augment_device", "tpu"}}, "t.json"), Error);
}

// The loader's contract holds for the device path: batches are a function of (seed, epoch, index),
// whatever the worker count, so a loader resumed from a saved LoaderState continues exactly.
TEST(DeviceAugment, LoaderResumeGivesTheSameAugmentedBatches) {
  const auto src = cases(1, {20, 24, 24}, {24, 28, 30});
  PipelineConfig cfg = pipeline({12, 16, 14}, false, 2);
  cfg.device_augment = true;
  LoaderOptions opt;
  opt.num_workers = 2;
  opt.batches_per_epoch = 3;
  std::vector<at::Tensor> first;
  LoaderState saved;
  {
    DataLoader loader(src, cfg, opt, LoaderState{5, 0, 0});
    for (int i = 0; i < 5; ++i) {
      if (i == 2) saved = loader.state();
      first.push_back(augment_batch_on_device(loader.next(), cfg, at::kCPU).data);
    }
  }
  opt.num_workers = 0;
  DataLoader resumed(src, cfg, opt, saved);
  for (int i = 2; i < 5; ++i)
    EXPECT_TRUE(augment_batch_on_device(resumed.next(), cfg, at::kCPU).data.equal(first[static_cast<size_t>(i)])) << i;
}
