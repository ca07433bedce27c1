#pragma once
// How a setting's values are spelled in files and on the command line: one table per enum type,
// {{"poly", LrSchedule::Poly}, {"cosine", LrSchedule::Cosine}}, which readers parse with and writers write from, so
// a setting is compared as a value, never as text. JsonObjectReader::choice (a key of a JSON object) and
// parse_name (a flag) read with it and list the table's names when a value is not among them.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace medseg {

template <class E>
using EnumNames = std::vector<std::pair<std::string, E>>;

// The value `name` names, or nothing.
template <class E>
std::optional<E> find_name(const EnumNames<E>& names, const std::string& name) {
  for (const auto& [n, v] : names)
    if (n == name) return v;
  return std::nullopt;
}

// The names, quoted and listed for a message: "'poly', 'cosine'".
template <class E>
std::string quoted_names(const EnumNames<E>& names) {
  std::string known;
  for (const auto& entry : names) known += concat(known.empty() ? "'" : ", '", entry.first, "'");
  return known;
}

// `value`'s name in `names` (each value has one).
template <class E>
const std::string& name_of(const EnumNames<E>& names, E value) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  return names.front().first;  // not reached: every table lists each value
}

// The value `name` names, or Error("<where> must be one of 'a', 'b', got '<name>'") (a command's flag).
template <class E>
E parse_name(const EnumNames<E>& names, const std::string& name, const std::string& where) {
  const std::optional<E> value = find_name(names, name);
  MEDSEG_CHECK(value.has_value(), where, " must be one of ", quoted_names(names), ", got '", name, "'");
  return *value;
}

}  // namespace medseg
