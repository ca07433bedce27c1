#pragma once
// nnU-Net v2's trainer variants by their names (nnUNetTrainer_250epochs, nnUNetTrainerNoMirroring, ...)
// from one table, configs/trainer_variants.json, rather than one code path per name: an accepted
// name is a base trainer config and the settings it changes; a refused name carries the reason
// medseg cannot honour it. The table and every name's status: docs/trainer_variants.md.
#include <functional>
#include <optional>
#include <string>

#include "training/trainer_config.h"

namespace medseg::training {

// The variant `name` of the table in `table_file`: its base (loaded by `load_base`, e.g.
// find_trainer_config) with the variant's settings applied and checked like any trainer config,
// named `name`. nullopt when the table does not list the name. Throws Error("<name>: <reason>")
// for a refused name, and FileError naming the table when it is malformed.
std::optional<TrainerConfig> trainer_variant(const std::string& name, const std::string& table_file,
                                             const std::function<TrainerConfig(const std::string&)>& load_base);

}  // namespace medseg::training
