#include "models/plans_architecture.h"

#include "core/error.h"
#include "plans/plans.h"

namespace medseg::models {

PlanNetworkSpec plan_network_spec(const nlohmann::json& plans, const std::string& config, const std::string& source) {
  MEDSEG_CHECK_FILE(plans.contains("configurations") && plans.at("configurations").is_object(), source,
                    "no 'configurations' object");
  const nlohmann::json c = planning::resolve_configuration(plans.at("configurations"), config, source);
  MEDSEG_CHECK_FILE(c.contains("architecture"), source, "configuration '", config,
                    "' has no 'architecture' block (plans from nnU-Net < 2.4?)");
  PlanNetworkSpec s;
  s.architecture = c.at("architecture");
  try {
    if (c.contains("patch_size")) s.patch_size = c.at("patch_size").get<std::vector<int64_t>>();
  } catch (const std::exception&) {
    throw FileError(source, "configuration '" + config + "': patch_size is not a list of integers");
  }
  if (c.contains("batch_size")) {
    MEDSEG_CHECK_FILE(c.at("batch_size").is_number_integer(), source, "configuration '", config,
                      "': batch_size is not an integer");
    s.batch_size = c.at("batch_size").get<int64_t>();
  }
  if (c.contains("medseg") && c.at("medseg").is_object()) s.medseg = c.at("medseg");
  return s;
}

}  // namespace medseg::models
