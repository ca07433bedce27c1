#pragma once
// Measures the CPU peak of one real training step (zero_grad(set_to_none) -> forward -> DC+CE loss
// with deep supervision -> backward -> clip -> optimizer step) with the counting allocator
// (core_torch/torch_memory.h), built from medseg's own network, loss and optimizer, and sets it beside the
// byte model's estimate (planning/memory_model.h). Benchmark code, not the product's: medseg_bench_memory and
// the measured-memory tests use it.
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "planning/memory_model.h"
#include "training/optimizer.h"

namespace medseg::bench {

struct MemoryProbeConfig {
  std::string name;
  nlohmann::json architecture;  // a plans.json architecture block (U-Nets)
  std::vector<int> patch;
  int batch = 2;
  int in_channels = 1;
  int num_classes = 3;
  bool amp = false;  // CPU autocast bf16 (no grad scaler, as in the trainer)
  training::OptimizerType optimizer = training::OptimizerType::SGD;  // SGD (nnU-Net: nesterov, momentum 0.99) or AdamW
  bool checkpoint_encoder = false;                                   // U-Nets: recompute each encoder stage in backward
  bool deep_supervision = true;
  int threads = 2;  // torch::set_num_threads
  uint64_t seed = 1234;
};

// Absolute bytes: everything the step's process allocated after the network was built on top of
// what was live before (weights, optimizer state, batch and targets included).
struct MemoryProbeResult {
  MemoryProbeConfig config;
  int64_t parameters = 0;
  int64_t static_bytes = 0;        // weights + optimizer state, live between steps
  int64_t batch_bytes = 0;         // input batch + deep-supervision targets
  int64_t held_after_forward = 0;  // live once the loss is computed
  int64_t peak_forward = 0, peak_backward = 0, peak_step = 0;
  int64_t measured_peak = 0;  // max of the three
  double seconds = 0;         // wall time of the measured step
  planning::MemoryEstimate estimate;

  double ratio() const { return measured_peak > 0 ? double(estimate.peak_bytes) / double(measured_peak) : 0.0; }
  nlohmann::json to_json() const;
};

// The model options that describe `c` (optimizer, AMP, checkpointing, deep supervision, CPU).
planning::MemoryOptions memory_options_for(const MemoryProbeConfig& c);

// Builds the network from c.architecture, runs one warm-up step (so optimizer state exists, as in
// steady-state training), then measures one more. Throws medseg::Error on a malformed config.
MemoryProbeResult probe_training_step(const MemoryProbeConfig& c);

// The architecture block medseg's planner writes for a synthetic dataset: `planner` (e.g.
// "ExperimentPlanner", "nnUNetPlannerResEncM") and `configuration` ("2d", "3d_fullres") for cases of
// `median_shape` voxels at 1 mm, `channels` inputs and `labels` labels (background included).
nlohmann::json planned_architecture(const std::string& planner, const std::string& configuration,
                                    const std::array<double, 3>& median_shape, int channels, int labels);

}  // namespace medseg::bench
