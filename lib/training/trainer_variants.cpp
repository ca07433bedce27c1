#include "training/trainer_variants.h"

#include "core/error.h"
#include "core/json_io.h"

namespace medseg::training {

std::optional<TrainerConfig> trainer_variant(const std::string& name, const std::string& table_file,
                                             const std::function<TrainerConfig(const std::string&)>& load_base) {
  const json table = read_json(table_file);
  MEDSEG_CHECK_FILE(table.is_object() && table.value("format", "") == "medseg-trainer-variants", table_file,
                    "not a trainer variant table (\"format\": \"medseg-trainer-variants\")");
  const json variants = table.value("variants", json::object());
  const json refused = table.value("refused", json::object());
  MEDSEG_CHECK_FILE(variants.is_object() && refused.is_object(), table_file,
                    "'variants' and 'refused' must be objects keyed by trainer name");
  if (refused.contains(name)) {
    MEDSEG_CHECK_FILE(refused.at(name).is_string(), table_file, "refused '", name, "' needs a reason (a string)");
    throw Error(name + ": " + refused.at(name).get<std::string>());
  }
  if (!variants.contains(name)) return std::nullopt;
  const json& v = variants.at(name);
  const std::string where = table_file + " (" + name + ")";
  MEDSEG_CHECK_FILE(v.is_object() && v.contains("base") && v.at("base").is_string(), where,
                    "a variant needs \"base\" (a trainer name) and \"settings\"");
  const std::string base = v.at("base").get<std::string>();
  // One level only: a variant of a variant could name itself in a loop.
  MEDSEG_CHECK_FILE(!variants.contains(base), where, "base '", base, "' is itself a variant; name a trainer config");
  json config = load_base(base).to_json();
  if (v.contains("settings")) {
    MEDSEG_CHECK_FILE(v.at("settings").is_object(), where, "'settings' must be an object of trainer config keys");
    config.merge_patch(v.at("settings"));
  }
  config["name"] = name;
  if (v.contains("description")) config["description"] = v.at("description");
  // Read like a config file: a typo or an out-of-range value in the table is an error naming it.
  TrainerConfig c = trainer_config_from_json(config, where);
  return c;
}

}  // namespace medseg::training
