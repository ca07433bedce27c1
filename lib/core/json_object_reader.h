#pragma once
// Typed, range-checked reads of one JSON object of a file (planner presets, plans.json, a preprocessed case's
// properties): every error is a FileError naming the file, the key path ("batch.min") and what was expected, in
// json_as's words (core/json_io.h): "<file>: key 'batch.min' is 2.5 (expected an integer)".
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_io.h"

namespace medseg {

class JsonObjectReader {
 public:
  // `what` names the object in the error when the top level is not an object ("a planner preset").
  JsonObjectReader(const json& j, std::string source, std::string prefix = "", const std::string& what = "the file");
  // Every message led by `scope` ("<file>: configuration '2d': key 'batch_size' ..."), for objects named by where
  // they stand in the file rather than by a key path (plans.json's configurations after inheritance).
  static JsonObjectReader scoped(const json& j, std::string source, std::string scope, const std::string& what);

  const json& value() const { return j_; }
  const std::string& source() const { return source_; }
  const std::string& scope() const { return scope_; }
  // "key 'batch.min'", for a message given to fail() or check().
  std::string key_name(const std::string& key) const { return concat("key '", path_of(key), "'"); }
  // `what` led by the scope, for json_as, which names the file but not the scope.
  std::string in_scope(const std::string& what) const { return scope_.empty() ? what : concat(scope_, ": ", what); }

  FileError error(const std::string& key, const std::string& problem) const;
  // Throws FileError(file, "<scope>: <problem>").
  [[noreturn]] void fail(const std::string& problem) const;
  // fail(<parts streamed in order>) unless `cond` holds: MEDSEG_CHECK_FILE with the scope. The parts are evaluated
  // whether or not the check fails (a function, not a macro): keep them cheap.
  template <class... Parts>
  void check(bool cond, const Parts&... parts) const {
    if (!cond) fail(concat(parts...));
  }
  // error(key, <parts>) unless `cond` holds: "<file>: <scope>: key '<path>' <parts>" (parts evaluated as in check).
  template <class... Parts>
  void check_key(bool cond, const std::string& key, const Parts&... parts) const {
    if (!cond) throw error(key, concat(parts...));
  }
  // "<what> is <value> (must be <lo>..<hi>)" unless lo <= value <= hi.
  void check_range(int64_t value, int64_t lo, int64_t hi, const std::string& what) const;

  // Every key is in `allowed`; a key in `elsewhere` belongs to another variant (named `variant`) of the format.
  void check_keys(const std::set<std::string>& allowed, const std::set<std::string>& elsewhere = {},
                  const std::string& variant = "") const;

  bool has(const std::string& key) const { return j_.contains(key); }
  bool is_null(const std::string& key) const { return j_.contains(key) && j_.at(key).is_null(); }
  // The key's value, as it is; the key is required.
  const json& at(const std::string& key) const { return *find(key, true); }

  // The key's value by json_as's rules (core/json_io.h); the key is required.
  template <class T>
  T get(const std::string& key) const {
    return json_as<T>(at(key), in_scope(key_name(key)), source_);
  }
  // The same, with `fallback` for an absent key or null (Python's None, which nnU-Net writes for "not set").
  template <class T>
  T get_or(const std::string& key, T fallback) const {
    return has(key) && !is_null(key) ? get<T>(key) : fallback;
  }
  // The same, with nullopt for an absent key or null.
  template <class T>
  std::optional<T> get_optional(const std::string& key) const {
    return has(key) && !is_null(key) ? std::optional<T>(get<T>(key)) : std::nullopt;
  }

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

  // A required string that names one of `options` (core/enum_names.h), read as its value.
  template <class E>
  E choice(const std::string& key, const EnumNames<E>& options) const {
    const std::string s = string(key);
    if (const std::optional<E> value = find_name(options, s)) return *value;
    throw error(key, concat("is '", s, "' (must be one of ", quoted_names(options), ")"));
  }

  // A required array of min_len..max_len finite numbers in [lo, hi].
  std::vector<double> numbers(const std::string& key, double lo, double hi, std::size_t min_len,
                              std::size_t max_len) const;

  // A nested object; an absent optional one reads as {} so that its keys take their defaults.
  JsonObjectReader object(const std::string& key, bool required) const;
  // The same for an optional object that may also be null (nnU-Net's "dropout_op_kwargs": null).
  JsonObjectReader optional_object(const std::string& key) const;
  // A list of objects, each named by its place ("medseg.cases[3].id"); an absent optional one reads as [].
  std::vector<JsonObjectReader> objects(const std::string& key, bool required) const;

 private:
  JsonObjectReader(const json& j, std::string source, std::string prefix, const std::string& what, std::string scope);
  std::string path_of(const std::string& key) const;
  const json* find(const std::string& key, bool required) const;
  [[noreturn]] void wrong_type(const std::string& key, const std::string& want, const json& v) const;
  int integer_value(const json& v, const std::string& key, int lo, int hi) const;

  const json& j_;
  std::string source_, prefix_, scope_;
};

}  // namespace medseg
