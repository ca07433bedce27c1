#include "core/json_object_reader.h"

#include <cmath>
#include <cstdio>

#include "core/path_component.h"
#include "core/paths.h"

namespace medseg {

namespace {

std::string fmt_number(double v) {
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

JsonObjectReader::JsonObjectReader(const json& j, std::string source, std::string prefix, const std::string& what)
    : JsonObjectReader(j, std::move(source), std::move(prefix), what, "") {}

JsonObjectReader::JsonObjectReader(const json& j, std::string source, std::string prefix, const std::string& what,
                                   std::string scope)
    : j_(j), source_(std::move(source)), prefix_(std::move(prefix)), scope_(std::move(scope)) {
  check(j_.is_object(),
        prefix_.empty() ? concat(what, " must be a JSON object") : concat(key_name(""), " must be an object"));
}

JsonObjectReader JsonObjectReader::scoped(const json& j, std::string source, std::string scope,
                                          const std::string& what) {
  return JsonObjectReader(j, std::move(source), "", what, std::move(scope));
}

FileError JsonObjectReader::error(const std::string& key, const std::string& problem) const {
  return FileError(source_, in_scope(concat(key_name(key), " ", problem)));
}

void JsonObjectReader::fail(const std::string& problem) const { throw FileError(source_, in_scope(problem)); }

void JsonObjectReader::check_range(int64_t value, int64_t lo, int64_t hi, const std::string& what) const {
  check(value >= lo && value <= hi, what, " is ", value, " (must be ", lo, "..", hi, ")");
}

void JsonObjectReader::check_keys(const std::set<std::string>& allowed, const std::set<std::string>& elsewhere,
                                  const std::string& variant) const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (allowed.count(it.key())) continue;
    if (elsewhere.count(it.key())) throw error(it.key(), concat("does not apply to ", variant));
    fail(concat("unknown key '", path_of(it.key()), "'"));
  }
}

std::string JsonObjectReader::string(const std::string& key, const std::string* fallback) const {
  const json* v = find(key, fallback == nullptr);
  if (!v) return *fallback;
  if (!v->is_string()) wrong_type(key, "a string", *v);
  std::string s = v->get<std::string>();
  check_key(!s.empty(), key, "is empty");
  return s;
}

std::string JsonObjectReader::file_name(const std::string& key) const {
  const std::string s = string(key);
  const std::string why = path_component_problem(s);
  check_key(why.empty(), key, "is '", printable(s), "' (must be one file name: ", why, ")");
  return s;
}

bool JsonObjectReader::boolean(const std::string& key, bool fallback) const {
  const json* v = find(key, false);
  if (!v) return fallback;
  if (!v->is_boolean()) wrong_type(key, "true or false", *v);
  return v->get<bool>();
}

double JsonObjectReader::number(const std::string& key, double lo, double hi, bool lo_open,
                                const double* fallback) const {
  const json* v = find(key, fallback == nullptr);
  if (!v) return *fallback;
  if (!v->is_number()) wrong_type(key, "a number", *v);
  const double d = v->get<double>();
  check_key(std::isfinite(d) && (lo_open ? d > lo : d >= lo) && d <= hi, key, "is ", v->dump(), " (must be ",
            lo_open ? "> " : ">= ", fmt_number(lo), " and <= ", fmt_number(hi), ")");
  return d;
}

int JsonObjectReader::integer(const std::string& key, int lo, int hi, const int* fallback) const {
  const json* v = find(key, fallback == nullptr);
  if (!v) return *fallback;
  return integer_value(*v, key, lo, hi);
}

std::vector<int> JsonObjectReader::integers(const std::string& key, int lo, int hi, std::size_t max_len) const {
  const json* v = find(key, true);
  if (!v->is_array()) wrong_type(key, "an array of integers", *v);
  check_key(!v->empty(), key, "is empty");
  check_key(v->size() <= max_len, key, "has ", v->size(), " entries (at most ", max_len, ")");
  std::vector<int> out;
  for (std::size_t i = 0; i < v->size(); ++i) out.push_back(integer_value((*v)[i], concat(key, "[", i, "]"), lo, hi));
  return out;
}

std::vector<double> JsonObjectReader::numbers(const std::string& key, double lo, double hi, std::size_t min_len,
                                              std::size_t max_len) const {
  const json* v = find(key, true);
  if (!v->is_array()) wrong_type(key, "an array of numbers", *v);
  check_key(v->size() >= min_len && v->size() <= max_len, key, "has ", v->size(), " entries (must have ", min_len,
            min_len == max_len ? "" : concat("..", max_len), ")");
  std::vector<double> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& x = (*v)[i];
    const std::string at = concat(key, "[", i, "]");
    if (!x.is_number()) wrong_type(at, "a number", x);
    const double d = x.get<double>();
    check_key(std::isfinite(d) && d >= lo && d <= hi, at, "is ", x.dump(), " (must be >= ", fmt_number(lo),
              " and <= ", fmt_number(hi), ")");
    out.push_back(d);
  }
  return out;
}

JsonObjectReader JsonObjectReader::object(const std::string& key, bool required) const {
  static const json empty = json::object();
  const json* v = find(key, required);
  return JsonObjectReader(v ? *v : empty, source_, path_of(key), "the file", scope_);
}

JsonObjectReader JsonObjectReader::optional_object(const std::string& key) const {
  static const json empty = json::object();
  const json* v = find(key, false);
  return JsonObjectReader(v && !v->is_null() ? *v : empty, source_, path_of(key), "the file", scope_);
}

std::vector<JsonObjectReader> JsonObjectReader::objects(const std::string& key, bool required) const {
  const json* v = find(key, required);
  std::vector<JsonObjectReader> out;
  if (!v) return out;
  if (!v->is_array()) wrong_type(key, "a list of objects", *v);
  for (std::size_t i = 0; i < v->size(); ++i)
    out.push_back(JsonObjectReader((*v)[i], source_, concat(path_of(key), "[", i, "]"), "the file", scope_));
  return out;
}

std::string JsonObjectReader::path_of(const std::string& key) const {
  if (key.empty()) return prefix_;
  return prefix_.empty() ? key : prefix_ + "." + key;
}

const json* JsonObjectReader::find(const std::string& key, bool required) const {
  if (j_.contains(key)) return &j_.at(key);
  if (required) fail(concat("missing key '", path_of(key), "'"));
  return nullptr;
}

void JsonObjectReader::wrong_type(const std::string& key, const std::string& want, const json& v) const {
  detail::json_value_error(v, in_scope(key_name(key)), source_, want);
}

int JsonObjectReader::integer_value(const json& v, const std::string& key, int lo, int hi) const {
  // Tools may write integral floats (2.0); 2.5 is not an integer.
  if (!v.is_number() || (v.is_number_float() && v.get<double>() != std::floor(v.get<double>())))
    wrong_type(key, "an integer", v);
  const double d = v.get<double>();
  check_key(d >= lo && d <= hi, key, "is ", v.dump(), " (must be ", lo, "..", hi, ")");
  return static_cast<int>(d);
}

}  // namespace medseg
