#include "models/plans_architecture.h"

#include <set>

#include "core/error.h"

namespace medseg::models {
namespace {

nlohmann::json resolve(const nlohmann::json& configs, const std::string& name, std::set<std::string>& seen,
                       const std::string& source) {
  if (!configs.contains(name)) throw FileError(source, "no configuration '" + name + "'");
  if (!seen.insert(name).second) throw FileError(source, "inherits_from cycle at '" + name + "'");
  const nlohmann::json& c = configs.at(name);
  if (!c.is_object()) throw FileError(source, "configuration '" + name + "' is not an object");
  if (!c.contains("inherits_from")) return c;
  nlohmann::json merged = resolve(configs, c.at("inherits_from").get<std::string>(), seen, source);
  for (auto it = c.begin(); it != c.end(); ++it)
    if (it.key() != "inherits_from") merged[it.key()] = it.value();
  return merged;
}

}  // namespace

PlanNetworkSpec plan_network_spec(const nlohmann::json& plans, const std::string& config, const std::string& source) {
  if (!plans.contains("configurations") || !plans.at("configurations").is_object())
    throw FileError(source, "no 'configurations' object");
  std::set<std::string> seen;
  const nlohmann::json c = resolve(plans.at("configurations"), config, seen, source);
  if (!c.contains("architecture"))
    throw FileError(source, "configuration '" + config + "' has no 'architecture' block (plans from nnU-Net < 2.4?)");
  PlanNetworkSpec s;
  s.architecture = c.at("architecture");
  try {
    if (c.contains("patch_size")) s.patch_size = c.at("patch_size").get<std::vector<int64_t>>();
  } catch (const std::exception&) {
    throw FileError(source, "configuration '" + config + "': patch_size is not a list of integers");
  }
  if (c.contains("batch_size")) {
    if (!c.at("batch_size").is_number_integer()) throw FileError(source, "configuration '" + config + "': batch_size is not an integer");
    s.batch_size = c.at("batch_size").get<int64_t>();
  }
  if (c.contains("medseg") && c.at("medseg").is_object()) s.medseg = c.at("medseg");
  return s;
}

int64_t dataset_input_channels(const nlohmann::json& dataset, const std::string& source) {
  for (const char* key : {"channel_names", "modality"})
    if (dataset.contains(key) && dataset.at(key).is_object()) return static_cast<int64_t>(dataset.at(key).size());
  throw FileError(source, "no 'channel_names' object");
}

int64_t dataset_num_classes(const nlohmann::json& dataset, const std::string& source) {
  if (!dataset.contains("labels") || !dataset.at("labels").is_object()) throw FileError(source, "no 'labels' object");
  int64_t labels = 0, regions = 0, background = 0;
  for (auto it = dataset.at("labels").begin(); it != dataset.at("labels").end(); ++it) {
    if (it.key() == "ignore") continue;
    ++labels;
    if (it.value().is_array()) ++regions;
    else if (it.value().is_number_integer() && it.value().get<int64_t>() == 0) ++background;
  }
  if (regions > 0) return labels - background;
  return labels;
}

}  // namespace medseg::models
