#include "planning/plans_file.h"

#include <filesystem>

#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/paths.h"

namespace fs = std::filesystem;

namespace medseg::planning {

ordered_json save_plans_file(const std::string& path, ordered_json plans) {
  if (fs::exists(path)) {
    ordered_json old;
    try {
      old = read_ordered_json(path);
    } catch (const FileError& e) {
      throw Error(concat(e.what(), "; it is an existing plans file: remove it or choose another plans name"));
    }
    if (old.contains("configurations") && old["configurations"].is_object())
      for (const auto& [name, cfg] : old["configurations"].items())
        if (!plans["configurations"].contains(name)) plans["configurations"][name] = cfg;
  }
  write_file_atomic(path, plans.dump(4));  // nnU-Net's json.dump(indent=4): no trailing newline
  return plans;
}

std::string dataset_name_from_paths(const std::vector<std::string>& paths, const std::string& fallback) {
  for (const auto& p : paths) {
    const std::string parent = fs::absolute(p).parent_path().filename().string();
    if (dataset_id_of(parent) >= 0) return parent;
  }
  return fallback;
}

}  // namespace medseg::planning
