#include "bench_support/memory_probe.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "core_torch/autocast.h"
#include "core/error.h"
#include "core/torch_compat.h"
#include "core_torch/torch_memory.h"
#include "core_torch/torch_settings.h"
#include "models/network.h"
#include "planning/planner.h"
#include "plans/plans.h"
#include "training/loss.h"
#include "training/optimizer.h"

namespace medseg::bench {

using training::clip_gradients;
using training::deep_supervision_loss;
using training::deep_supervision_weights;
using training::make_optimizer;
using training::OptimizerConfig;
using training::OptimizerType;
using training::unique_parameters;
namespace {

int64_t live_bytes() { return cpu_memory_stats().current_bytes; }
int64_t peak_bytes() { return cpu_memory_stats().peak_bytes; }

int64_t nbytes(const at::Tensor& t) { return t.defined() ? static_cast<int64_t>(t.nbytes()) : 0; }

// Spatial size of each network output (highest resolution first), from the plan's strides.
std::vector<std::vector<int64_t>> output_sizes(const planning::ArchitecturePlan& a, const std::vector<int>& patch,
                                               bool deep_supervision) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> size(patch.begin(), patch.end());
  if (a.primus) return {size};  // one output, at full resolution
  for (int s = 0; s + 1 < a.n_stages; ++s) {
    for (std::size_t i = 0; i < size.size(); ++i) size[i] /= a.strides[static_cast<std::size_t>(s)][i];
    out.push_back(size);
  }
  if (!deep_supervision) out.resize(1);
  return out;
}

// torch::optim::Optimizer::zero_grad() keeps zeroed gradients in LibTorch 1.13 and drops them in
// 2.x; dropping them is what the model assumes (gradients appear during backward).
void zero_grad_to_none(std::vector<at::Tensor>& params) {
  for (auto& p : params) p.mutable_grad() = at::Tensor();
}

struct Step {
  models::SegmentationNetwork& net;
  torch::optim::Optimizer& opt;
  std::vector<at::Tensor>& params;
  const at::Tensor& x;
  const std::vector<at::Tensor>& targets;
  std::vector<double> weights;
  bool amp;

  // One training step as the trainer runs it; fills the phase peaks when `r` is given.
  void run(MemoryProbeResult* r, int64_t base) {
    zero_grad_to_none(params);
    reset_cpu_peak();
    at::Tensor loss;
    {
      AutocastGuard autocast(/*cuda=*/false, amp, at::kBFloat16);
      const auto outputs = net->forward(x);
      loss = deep_supervision_loss(outputs, targets, weights);
    }
    if (r) {
      r->peak_forward = peak_bytes() - base;
      r->held_after_forward = live_bytes() - base;
      reset_cpu_peak();
    }
    loss.backward();
    if (r) {
      r->peak_backward = peak_bytes() - base;
      reset_cpu_peak();
    }
    clip_gradients(params, 12.0);
    opt.step();
    if (r) r->peak_step = peak_bytes() - base;
  }
};

}  // namespace

planning::MemoryOptions memory_options_for(const MemoryProbeConfig& c) {
  planning::MemoryOptions o;
  o.amp = c.amp;
  o.optimizer =
      c.optimizer == OptimizerType::AdamW ? planning::OptimizerKind::AdamW : planning::OptimizerKind::SgdMomentum;
  o.deep_supervision = c.deep_supervision;
  o.checkpointing = c.checkpoint_encoder;
  o.device = planning::StepDevice::Cpu;
  o.cpu_autocast_fp32_transposed_conv = compat::cpu_autocast_transposed_conv_fp32();
  return o;
}

MemoryProbeResult probe_training_step(const MemoryProbeConfig& c) {
  const planning::ArchitecturePlan arch = planning::architecture_from_json(c.architecture, "memory probe", c.name);
  if (arch.is_swin_unetr())
    throw Error("memory probe: only PlainConvUNet / ResidualEncoderUNet / Primus are supported");
  if (static_cast<int>(c.patch.size()) != arch.dim) throw Error("memory probe: patch rank differs from the network");
  MemoryProbeResult r;
  r.config = c;
  r.estimate =
      planning::estimate_training_memory(arch, c.patch, c.batch, c.in_channels, c.num_classes, memory_options_for(c));

  TorchSettings settings;
  settings.threads = c.threads;
  settings.seed = static_cast<uint64_t>(c.seed);
  const ScopedTorchSettings scoped(settings);
  install_counting_cpu_allocator();
  const int64_t base = live_bytes();

  models::NetworkBuildOptions nb;
  nb.deep_supervision = c.deep_supervision;
  nb.checkpoint_encoder = c.checkpoint_encoder;
  auto net = models::build_network(c.architecture, c.in_channels, c.num_classes, nb);
  net->train();
  if (c.optimizer == OptimizerType::Adam)
    throw Error("memory probe: the memory model has no plain Adam (SGD or AdamW)");
  const OptimizerConfig oc =
      c.optimizer == OptimizerType::AdamW ? OptimizerConfig::adamw() : OptimizerConfig::nnunet_sgd();
  auto opt = make_optimizer(*net, oc);
  auto params = unique_parameters(*net);
  r.parameters = net->parameter_count();

  std::vector<int64_t> xshape{c.batch, c.in_channels};
  xshape.insert(xshape.end(), c.patch.begin(), c.patch.end());
  const at::Tensor x = torch::randn(xshape);
  std::vector<at::Tensor> targets;
  for (const auto& size : output_sizes(arch, c.patch, c.deep_supervision)) {
    std::vector<int64_t> shape{c.batch, 1};
    shape.insert(shape.end(), size.begin(), size.end());
    targets.push_back(torch::randint(0, c.num_classes, shape).to(at::kFloat));  // as the data loader delivers them
  }
  r.batch_bytes = nbytes(x);
  for (const auto& t : targets) r.batch_bytes += nbytes(t);

  Step step{net, *opt, params, x, targets, deep_supervision_weights(static_cast<int>(targets.size())), c.amp};
  step.run(nullptr, base);  // warm-up: momentum / Adam moments now exist
  zero_grad_to_none(params);
  r.static_bytes = live_bytes() - base - r.batch_bytes;
  const auto t0 = std::chrono::steady_clock::now();
  step.run(&r, base);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.measured_peak = std::max({r.peak_forward, r.peak_backward, r.peak_step});
  return r;
}

nlohmann::json MemoryProbeResult::to_json() const {
  return {{"name", config.name},
          {"network", config.architecture.value("network_class_name", "")},
          {"patch", config.patch},
          {"batch", config.batch},
          {"amp", config.amp ? "bf16" : "off"},
          {"optimizer", optimizer_type_name(config.optimizer)},
          {"checkpoint_encoder", config.checkpoint_encoder},
          {"threads", config.threads},
          {"parameters", parameters},
          {"measured",
           {{"peak_bytes", measured_peak},
            {"static_bytes", static_bytes},
            {"batch_bytes", batch_bytes},
            {"held_after_forward", held_after_forward},
            {"peak_forward", peak_forward},
            {"peak_backward", peak_backward},
            {"peak_step", peak_step},
            {"seconds", seconds}}},
          {"estimate", nlohmann::json::parse(estimate.to_json().dump())},
          {"ratio_estimate_over_measured", ratio()}};
}

nlohmann::json planned_architecture(const std::string& planner, const std::string& configuration,
                                    const std::array<double, 3>& median_shape, int channels, int labels) {
  constexpr int kCases = 20;
  nlohmann::json props = nlohmann::json::object(), ch = nlohmann::json::object(), lab = nlohmann::json::object();
  for (int c = 0; c < channels; ++c) {
    props[std::to_string(c)] = {{"max", 1000.0}, {"mean", 100.0},          {"median", 90.0},
                                {"min", -5.0},   {"percentile_00_5", 1.0}, {"percentile_99_5", 800.0},
                                {"std", 50.0}};
    ch[std::to_string(c)] = "MRI";
  }
  for (int l = 0; l < labels; ++l) lab[l == 0 ? "background" : "class" + std::to_string(l)] = l;
  const nlohmann::json fp = {{"spacings", std::vector<std::array<double, 3>>(kCases, {1.0, 1.0, 1.0})},
                             {"shapes_after_crop", std::vector<std::array<double, 3>>(kCases, median_shape)},
                             {"foreground_intensity_properties_per_channel", props},
                             {"median_relative_size_after_cropping", 1.0}};
  const nlohmann::json ds = {
      {"channel_names", ch}, {"labels", lab}, {"numTraining", kCases}, {"file_ending", ".nii.gz"}};
  planning::PlannerOptions po;
  po.planner = planner;
  po.dataset_name = "Dataset999_MemoryProbe";
  po.annotate_memory = false;
  const auto plans = planning::plan_experiment(planning::fingerprint_from_json(fp, "synthetic fingerprint"),
                                               planning::dataset_json_from_json(ds, "synthetic dataset.json"), po);
  const auto& cfgs = plans.at("configurations");
  if (!cfgs.contains(configuration)) throw Error("memory probe: the planner made no '" + configuration + "'");
  return nlohmann::json::parse(cfgs.at(configuration).at("architecture").dump());
}

}  // namespace medseg::bench
