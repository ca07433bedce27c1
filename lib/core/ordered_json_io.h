#pragma once
// JSON that keeps its keys in the file's order. nnU-Net takes meaning from the order of dataset.json's
// keys (the order of "labels" is the order of region outputs and of "regions_class_order"), so
// dataset.json and every copy of it is read and written as ordered_json; `json` sorts keys and
// would lose it.
#include <string>

#include "core/json_io.h"

namespace medseg {

using ordered_json = nlohmann::ordered_json;

// read_json keeping every object's keys in the file's order; the same errors.
ordered_json read_ordered_json(const std::string& path);

// write_json keeping the keys' order (atomic, indented).
void write_ordered_json(const std::string& path, const ordered_json& j, int indent = 4);

}  // namespace medseg
