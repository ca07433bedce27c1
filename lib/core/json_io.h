#pragma once
// Reading and writing JSON files with errors that name the file, and atomic writes.
#include <nlohmann/json.hpp>
#include <string>

namespace medseg {

using json = nlohmann::json;

// The deepest nesting medseg reads. nnU-Net's files nest 6 levels (plans.json: configurations, a
// configuration, architecture, arch_kwargs, a list); a file nested 100,000 levels deep is 200 KB and
// overflows the stack of every recursive walk (copy, dump, comparison) that follows the parse.
inline constexpr int kMaxJsonDepth = 100;

// Parses JSON text (J: json or ordered_json) read from `source`, a file or an entry in one. Throws
// FileError(source, "invalid JSON (...)") for malformed text, a number beyond double's range (1e400)
// and nesting deeper than kMaxJsonDepth, refused while parsing, before any deep value exists.
// Every JSON medseg did not write itself in this process goes through here.
template <class J>
J parse_json_text(const std::string& text, const std::string& source);

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
