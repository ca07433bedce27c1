#pragma once
// The few plans.json facts the network factory needs, without reading the whole plans file (whose
// other keys medseg_model_info does not need): a configuration's architecture block and patch size,
// its `inherits_from` chain resolved by planning's one resolver. The dataset side (channels, output
// count) is io/dataset.h's.
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

}  // namespace medseg::models
