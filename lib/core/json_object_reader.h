#pragma once
// Typed, range-checked reads of one JSON object of a file, for formats that must refuse what they do not
// know (planner presets): every error is a FileError naming the file and the key path ("batch.min").
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/json_io.h"

namespace medseg {

namespace detail {
template <class T>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};
[[noreturn]] void json_value_error(const json& v, const std::string& what, const std::string& file,
                                   const std::string& expected);
}  // namespace detail

// One value as T, with the rules JsonObjectReader applies, for readers that walk a JSON document
// themselves (plans, checkpoint metadata): `v` as T, checked: `what` names the value in errors ("key 'batch_size'"),
// `file` the file. An integer type takes only integral numbers within its range (99999999999999999999 is no int, and
// 2.5 no batch size), a floating type only finite numbers; a list is checked element by element.
// Throws FileError(file, "<what> ...").
template <class T>
T json_as(const json& v, const std::string& what, const std::string& file) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) detail::json_value_error(v, what, file, "true or false");
    return v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    constexpr auto lo = std::numeric_limits<T>::min();
    constexpr auto hi = std::numeric_limits<T>::max();
    const std::string range = concat("an integer in ", +lo, "..", +hi);  // + prints int8_t/uint8_t as numbers
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi)) detail::json_value_error(v, what, file, range);
      return static_cast<T>(u);
    }
    if (v.is_number_integer()) {
      const auto i = v.get<int64_t>();
      if ((std::is_signed_v<T> && i < static_cast<int64_t>(lo)) || (!std::is_signed_v<T> && i < 0) ||
          (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(hi)))
        detail::json_value_error(v, what, file, range);
      return static_cast<T>(i);
    }
    if (v.is_number_float()) {  // 36.0 is 36; integers beyond 2^64 are parsed as floats
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(lo) && d < static_cast<double>(hi) + 1.0)
        return static_cast<T>(d);
    }
    detail::json_value_error(v, what, file, range);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number() || !std::isfinite(v.get<double>())) detail::json_value_error(v, what, file, "a finite number");
    return v.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) detail::json_value_error(v, what, file, "a string");
    return v.get<std::string>();
  } else if constexpr (detail::is_std_vector<T>::value) {
    if (!v.is_array()) detail::json_value_error(v, what, file, "a list");
    T out;
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(json_as<typename T::value_type>(v[i], concat(what, "[", i, "]"), file));
    return out;
  } else {
    try {
      return v.get<T>();
    } catch (const json::exception&) { detail::json_value_error(v, what, file, "another type"); }
  }
}

class JsonObjectReader {
 public:
  // `what` names the object in the error when the top level is not an object ("a planner preset").
  JsonObjectReader(const json& j, std::string source, std::string prefix = "", const std::string& what = "the file");

  FileError error(const std::string& key, const std::string& problem) const;

  // Every key is in `allowed`; a key in `elsewhere` belongs to another variant (named `variant`) of the format.
  void check_keys(const std::set<std::string>& allowed, const std::set<std::string>& elsewhere = {},
                  const std::string& variant = "") const;

  bool has(const std::string& key) const { return j_.contains(key); }
  bool is_null(const std::string& key) const { return j_.contains(key) && j_.at(key).is_null(); }

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

  template <class E>
  E choice(const std::string& key, const std::vector<std::pair<std::string, E>>& options) const {
    const std::string s = string(key);
    std::string names;
    for (const auto& [name, value] : options) {
      if (name == s) return value;
      names += (names.empty() ? "'" : ", '") + name + "'";
    }
    throw error(key, "is '" + s + "' (must be one of " + names + ")");
  }

  // A required array of min_len..max_len finite numbers in [lo, hi].
  std::vector<double> numbers(const std::string& key, double lo, double hi, std::size_t min_len,
                              std::size_t max_len) const;

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
