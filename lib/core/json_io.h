#pragma once
// Reading and writing JSON files with errors that name the file, and atomic writes.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

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

// ---------------------------------------------------------------- reading values

// Every typed read of a JSON value fails with one message, "<file>: <what> is <value> (expected <type>)",
// where <what> names the value ("key 'batch_size'", "configuration '2d': key 'spacing'[1]").
namespace detail {
template <class T>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
[[noreturn]] void json_value_error(const json& v, const std::string& what, const std::string& file,
                                   const std::string& expected);
}  // namespace detail

// One value as T, for readers that walk a JSON document themselves (JsonObjectReader, checkpoint metadata): `v` as
// T, checked: `what` names the value in errors ("key 'batch_size'"), `file` the file. An integer type takes only
// integral numbers within its range (99999999999999999999 is no int, and 2.5 no batch size), a floating type only
// finite numbers; a list (std::vector, or std::array of exactly its length) is checked element by element.
// Throws FileError(file, "<what> is <value> (expected <type>)").
template <class T>
T json_as(const json& v, const std::string& what, const std::string& file);

namespace detail {

// Whether the 64-bit integer `i` is a value of the integer type T.
template <class T>
constexpr bool int64_fits(int64_t i) {
  if (i < 0) return std::is_signed_v<T> && i >= static_cast<int64_t>(std::numeric_limits<T>::min());
  return static_cast<uint64_t>(i) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
}

template <class T>
T json_integer(const json& v, const std::string& what, const std::string& file) {
  constexpr auto lo = std::numeric_limits<T>::min();
  constexpr auto hi = std::numeric_limits<T>::max();
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(hi)) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    if (int64_fits<T>(i)) return static_cast<T>(i);
  } else if (v.is_number_float()) {  // 36.0 is 36; integers beyond 2^64 are parsed as floats
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(lo) && d < static_cast<double>(hi) + 1.0)
      return static_cast<T>(d);
  }
  json_value_error(v, what, file, concat("an integer in ", +lo, "..", +hi));  // + prints int8_t/uint8_t as numbers
}

// A std::vector (any length) or a std::array (exactly its length), element by element.
template <class T>
T json_list(const json& v, const std::string& what, const std::string& file) {
  T out{};
  if constexpr (is_std_array<T>::value) {
    if (!v.is_array() || v.size() != out.size()) json_value_error(v, what, file, concat("a list of ", out.size()));
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = json_as<typename T::value_type>(v[i], concat(what, "[", i, "]"), file);
  } else {
    if (!v.is_array()) json_value_error(v, what, file, "a list");
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(json_as<typename T::value_type>(v[i], concat(what, "[", i, "]"), file));
  }
  return out;
}

}  // namespace detail

template <class T>
T json_as(const json& v, const std::string& what, const std::string& file) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) detail::json_value_error(v, what, file, "true or false");
    return v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    return detail::json_integer<T>(v, what, file);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number() || !std::isfinite(v.get<double>())) detail::json_value_error(v, what, file, "a finite number");
    return v.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) detail::json_value_error(v, what, file, "a string");
    return v.get<std::string>();
  } else if constexpr (detail::is_std_vector<T>::value || detail::is_std_array<T>::value) {
    return detail::json_list<T>(v, what, file);
  } else {
    try {
      return v.get<T>();
    } catch (const json::exception&) { detail::json_value_error(v, what, file, "another type"); }
  }
}

// The value of `key` in the object `j` as T, by json_as's rules; FileError(file, "missing key '<key>'") without it.
// JsonObjectReader (core/json_object_reader.h) reads a whole object this way.
template <class T>
T json_get(const json& j, const std::string& key, const std::string& file) {
  MEDSEG_CHECK_FILE(j.is_object() && j.contains(key), file, "missing key '", key, "'");
  return json_as<T>(j.at(key), concat("key '", key, "'"), file);
}

}  // namespace medseg
