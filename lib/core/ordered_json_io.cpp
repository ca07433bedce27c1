#include "core/ordered_json_io.h"

namespace medseg {

ordered_json read_ordered_json(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return ordered_json::parse(text);
  } catch (const ordered_json::exception&) {
    read_json(path);  // an empty or malformed file: read_json's error names the file and the problem
    throw;
  }
}

void write_ordered_json(const std::string& path, const ordered_json& j, int indent) {
  write_file_atomic(path, j.dump(indent) + "\n");
}

}  // namespace medseg
