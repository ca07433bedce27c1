#pragma once
// The few plans.json / dataset.json facts the network factory needs, read without lib/planning:
// a configuration's architecture block and patch size (with `inherits_from` resolved), and the
// input-channel / output-class counts of a dataset.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace medseg::models {

struct PlanNetworkSpec {
  nlohmann::json architecture;      // {network_class_name, arch_kwargs, ...}
  std::vector<int64_t> patch_size;  // may be empty when the configuration has none
  int64_t batch_size = 0;           // 0 when the configuration has none
  nlohmann::json medseg;            // the configuration's "medseg" block, null when absent
};

// configurations[config] with parents merged like nnU-Net's PlansManager (child keys override).
// Throws medseg::Error naming `source` for unknown configurations, cycles or a missing architecture.
PlanNetworkSpec plan_network_spec(const nlohmann::json& plans, const std::string& config,
                                  const std::string& source = "plans.json");

// len(channel_names) (legacy key: modality).
int64_t dataset_input_channels(const nlohmann::json& dataset, const std::string& source = "dataset.json");
// Segmentation heads: one per label (background included), or one per foreground region for
// region-based datasets; the "ignore" label is not a head.
int64_t dataset_num_classes(const nlohmann::json& dataset, const std::string& source = "dataset.json");

}  // namespace medseg::models
