#pragma once
// The experiment planner: dataset fingerprint + dataset.json -> plans.json (nnU-Net v2 schema).
// With nnU-Net's planner names and the default proxy memory model the result is identical to what
// nnU-Net v2.8 writes. Returned as ordered JSON so the file keeps nnU-Net's key order.
#include <optional>
#include <string>
#include <vector>

#include "planning/planner_inputs.h"

namespace medseg::planning {

using ordered_json = nlohmann::ordered_json;

enum class MemoryModelKind { Proxy, Bytes };

struct PlannerOptions {
  std::string planner = "ExperimentPlanner";     // a preset name or a preset file (planner_specs.h)
  std::string presets_dir;                       // searched first for the preset (--presets)
  std::string dataset_name;                      // written as dataset_name
  std::optional<double> gpu_memory_target_gb;    // default: the planner's own
  std::string plans_name;                        // default: the planner's own
  std::vector<double> overwrite_target_spacing;  // empty or 3 values, array order like the fingerprint
  std::string preprocessor_name = "DefaultPreprocessor";
  MemoryModelKind memory_model = MemoryModelKind::Proxy;
  double memory_headroom = 0.1;   // bytes model: usable = target * (1 - headroom)
  bool amp = true;                // bytes model: mixed precision training
  std::string optimizer = "sgd";  // bytes model: "sgd" (momentum) or "adamw"
  bool annotate_memory = true;    // add configuration["medseg"] with the byte estimate
  // Bytes model: plan for N ranks that each hold a slab of every patch (docs/spatial_parallel.md); the
  // memory target is per rank. 3D U-Net configurations only.
  int spatial_parallel = 1;
};

// Plans for every configuration nnU-Net would create. Throws Error on inconsistent inputs.
ordered_json plan_experiment(const FingerprintInput& fp, const DatasetJsonInput& ds, const PlannerOptions& opt);

// Pieces exposed for tests.
std::vector<double> fullres_target_spacing(const FingerprintInput& fp, double anisotropy_threshold,
                                           const std::vector<double>& overwrite = {});
std::vector<int> transpose_forward_for(const std::vector<double>& target_spacing);
std::string reader_writer_for(const DatasetJsonInput& ds, bool is_3d);
std::string normalization_scheme_for(const std::string& channel_name);

}  // namespace medseg::planning
