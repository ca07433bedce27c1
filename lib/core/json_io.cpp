#include "core/json_io.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_writer.h"
#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg {

std::string read_file(const std::string& path) {
  // A folder opens as a stream on Linux and reads as nothing: say what it is.
  if (fs::is_directory(path)) throw FileError(path, "is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path, fs::exists(path) ? "cannot be opened" : "file not found");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// "[json.exception.out_of_range.406] number overflow parsing '1e400'" -> "number overflow parsing '1e400'"
std::string without_exception_id(const std::string& what) {
  const auto p = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && p != std::string::npos ? what.substr(p + 2) : what;
}

}  // namespace

json read_json(const std::string& path) {
  const std::string text = read_file(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw FileError(path, "empty JSON file");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number overflow (1e400)
    throw FileError(path, "invalid JSON (" + without_exception_id(e.what()) + ")");
  }
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_parts_atomic(path, {{bytes.data(), bytes.size()}});
}

void write_json(const std::string& path, const json& j, int indent) { write_file_atomic(path, j.dump(indent) + "\n"); }

}  // namespace medseg
