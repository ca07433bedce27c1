#include "core/ordered_json_io.h"

#include "core/error.h"

namespace medseg {

ordered_json read_ordered_json(const std::string& path) {
  const std::string text = read_file(path);
  MEDSEG_CHECK_FILE(text.find_first_not_of(" \t\r\n") != std::string::npos, path, "empty JSON file");
  return parse_json_text<ordered_json>(text, path);
}

void write_ordered_json(const std::string& path, const ordered_json& j, int indent) {
  write_file_atomic(path, j.dump(indent) + "\n");
}

}  // namespace medseg
