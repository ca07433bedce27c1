#include "planning/move_plans.h"

#include "core/error.h"

namespace medseg::planning {

ordered_json move_plans(ordered_json plans, const std::string& target_dataset_name,
                        const std::string& source_plans_name, const std::string& target_plans_name,
                        const DatasetJsonInput& target_dataset) {
  MEDSEG_CHECK(plans.is_object() && plans.contains("configurations") && plans["configurations"].is_object(), "plans ",
               source_plans_name, " have no \"configurations\" object");
  plans["dataset_name"] = target_dataset_name;
  bool is_3d = false;
  for (auto& [name, cfg] : plans["configurations"].items()) {
    MEDSEG_CHECK(cfg.is_object(), "plans ", source_plans_name, ": configuration \"", name, "\" is not an object");
    const auto patch = cfg.find("patch_size");
    if (patch != cfg.end() && patch->is_array() && patch->size() == 3) is_3d = true;
    if (target_plans_name == source_plans_name || !cfg.contains("data_identifier")) continue;
    MEDSEG_CHECK(cfg["data_identifier"].is_string(), "plans ", source_plans_name, ": configuration \"", name,
                 "\" has a data_identifier that is not a string");
    const std::string old = cfg["data_identifier"].get<std::string>();
    cfg["data_identifier"] = old.rfind(source_plans_name, 0) == 0
                                 ? target_plans_name + old.substr(source_plans_name.size())
                                 : target_plans_name + "_" + old;
  }
  // The reader/writer follows the target's images (nnU-Net looks at one of its files; for .tif the
  // plans' own dimensionality stands in for it).
  plans["image_reader_writer"] = reader_writer_for(target_dataset, is_3d);
  plans["plans_name"] = target_plans_name;
  return plans;
}

}  // namespace medseg::planning
