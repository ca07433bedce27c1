#pragma once
// Reading and writing JSON files with errors that name the file, and atomic writes.
#include <nlohmann/json.hpp>
#include <string>

namespace medseg {

using json = nlohmann::json;

// Parses a JSON file. Throws FileError naming the file for a missing, empty or malformed file.
json read_json(const std::string& path);

// Writes JSON atomically (temp file in the same folder, fsync, rename), indented for humans.
void write_json(const std::string& path, const json& j, int indent = 4);

// Writes bytes atomically: temp file in the same folder, fsync, rename, fsync of the folder.
void write_file_atomic(const std::string& path, const std::string& bytes);

std::string read_file(const std::string& path);

// Typed field access with errors naming the file and key.
template <class T>
T json_get(const json& j, const std::string& key, const std::string& file) {
  if (!j.contains(key)) throw std::runtime_error(file + ": missing key '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const std::exception& e) {
    throw std::runtime_error(file + ": key '" + key + "' has the wrong type (" + e.what() + ")");
  }
}

}  // namespace medseg
