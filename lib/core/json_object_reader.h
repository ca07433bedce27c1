#pragma once
// Typed, range-checked reads of one JSON object of a file, for formats that must refuse what they do not
// know (planner presets): every error is a FileError naming the file and the key path ("batch.min").
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/json_io.h"

namespace medseg {

class JsonObjectReader {
 public:
  // `what` names the object in the error when the top level is not an object ("a planner preset").
  JsonObjectReader(const json& j, std::string source, std::string prefix = "", const std::string& what = "the file");

  FileError error(const std::string& key, const std::string& problem) const;

  // Every key is in `allowed`; a key in `elsewhere` belongs to another variant (named `variant`) of the format.
  void check_keys(const std::set<std::string>& allowed, const std::set<std::string>& elsewhere = {},
                  const std::string& variant = "") const;

  bool has(const std::string& key) const { return j_.contains(key); }

  // Without a fallback the key is required. Strings must not be empty.
  std::string string(const std::string& key, const std::string* fallback = nullptr) const;
  // One file or folder name (it becomes part of paths): no '/' or '\', not '.' or '..', no control characters.
  std::string file_name(const std::string& key) const;
  bool boolean(const std::string& key, bool fallback) const;
  // A finite number in [lo, hi], or (lo, hi] when lo_open.
  double number(const std::string& key, double lo, double hi, bool lo_open, const double* fallback = nullptr) const;
  // An integer in [lo, hi]; 2.0 is 2, 2.5 is an error.
  int integer(const std::string& key, int lo, int hi, const int* fallback = nullptr) const;
  // A required array of 1..max_len integers in [lo, hi].
  std::vector<int> integers(const std::string& key, int lo, int hi, std::size_t max_len) const;

  template <class E> E choice(const std::string& key, const std::vector<std::pair<std::string, E>>& options) const {
    const std::string s = string(key);
    std::string names;
    for (const auto& [name, value] : options) {
      if (name == s) return value;
      names += (names.empty() ? "'" : ", '") + name + "'";
    }
    throw error(key, "is '" + s + "' (must be one of " + names + ")");
  }

  // A nested object; an absent optional one reads as {} so that its keys take their defaults.
  JsonObjectReader object(const std::string& key, bool required) const;

 private:
  std::string path_of(const std::string& key) const;
  const json* find(const std::string& key, bool required) const;
  FileError wrong_type(const std::string& key, const std::string& want, const json& v) const;
  int integer_value(const json& v, const std::string& key, int lo, int hi) const;

  const json& j_;
  std::string source_, prefix_;
};

}  // namespace medseg
