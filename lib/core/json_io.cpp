#include "core/json_io.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/atomic_writer.h"
#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg {

std::string read_file(const std::string& path) {
  // A folder opens as a stream on Linux and reads as nothing: say what it is.
  MEDSEG_CHECK_FILE(!fs::is_directory(path), path, "is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  MEDSEG_CHECK_FILE(in, path, fs::exists(path) ? "cannot be opened" : "file not found");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace detail {

void json_value_error(const json& v, const std::string& what, const std::string& file, const std::string& expected) {
  std::string shown = v.dump();
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  throw FileError(file, concat(what, " is ", shown, " (expected ", expected, ")"));
}

}  // namespace detail

namespace {

// "[json.exception.out_of_range.406] number overflow parsing '1e400'" -> "number overflow parsing '1e400'"
std::string without_exception_id(const std::string& what) {
  const auto p = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && p != std::string::npos ? what.substr(p + 2) : what;
}

struct TooDeep {};

// A DOM builder for nlohmann's SAX parser that (1) refuses nesting deeper than kMaxJsonDepth as the
// containers open, and (2) adds each key of an ordered_json object in constant time: ordered_json's own
// insert searches the object's keys one by one, so an object of 1e6 keys (a dataset.json's labels) took
// minutes to parse. Duplicate keys keep nlohmann's meaning: the first position, the last value.
template <class J>
class BoundedDomBuilder : public nlohmann::json_sax<J> {
 public:
  BoundedDomBuilder(J& root, const std::string& source) : root_(root), source_(source) {}

  bool null() override { return put(J(nullptr)); }
  bool boolean(bool v) override { return put(J(v)); }
  bool number_integer(typename J::number_integer_t v) override { return put(J(v)); }
  bool number_unsigned(typename J::number_unsigned_t v) override { return put(J(v)); }
  bool number_float(typename J::number_float_t v, const typename J::string_t&) override { return put(J(v)); }
  bool string(typename J::string_t& v) override { return put(J(std::move(v))); }
  bool binary(typename J::binary_t& v) override { return put(J(std::move(v))); }
  bool start_object(std::size_t) override { return open(J::object()); }
  bool start_array(std::size_t) override { return open(J::array()); }
  bool key(typename J::string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // parse_error, and out_of_range for a number overflow (1e400)
    throw FileError(source_, concat("invalid JSON (", without_exception_id(e.what()), ")"));
  }

 private:
  bool open(J container) {
    if (static_cast<int>(stack_.size()) >= kMaxJsonDepth) throw TooDeep{};
    J* added = add(std::move(container));
    stack_.push_back(added);
    keys_.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }
  bool put(J value) {
    add(std::move(value));
    return true;
  }
  J* add(J value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    J& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(value));
      return &top.back();
    }
    auto& object = top.template get_ref<typename J::object_t&>();
    if constexpr (std::is_same_v<J, nlohmann::ordered_json>) {
      const auto [at, fresh] = keys_.back().emplace(key_, object.size());
      if (!fresh) {  // a repeated key: its first position, the last value
        auto& slot = object.begin()[static_cast<std::ptrdiff_t>(at->second)].second;
        slot = std::move(value);
        return &slot;
      }
      auto& entries = static_cast<typename J::object_t::Container&>(object);
      entries.emplace_back(key_, std::move(value));
      return &entries.back().second;
    } else {
      J& slot = object[key_];
      slot = std::move(value);
      return &slot;
    }
  }

  J& root_;
  const std::string& source_;
  std::vector<J*> stack_;
  std::vector<std::unordered_map<std::string, size_t>> keys_;  // per open object: key -> position
  typename J::string_t key_;
};

}  // namespace

template <class J>
J parse_json_text(const std::string& text, const std::string& source) {
  J root;
  BoundedDomBuilder<J> builder(root, source);
  try {
    J::sax_parse(text, &builder);
  } catch (const TooDeep&) {
    throw FileError(source, concat("invalid JSON (nested deeper than ", kMaxJsonDepth, " levels)"));
  } catch (const typename J::exception& e) {
    throw FileError(source, concat("invalid JSON (", without_exception_id(e.what()), ")"));
  }
  return root;
}

template json parse_json_text<json>(const std::string&, const std::string&);
template nlohmann::ordered_json parse_json_text<nlohmann::ordered_json>(const std::string&, const std::string&);

json read_json(const std::string& path) {
  const std::string text = read_file(path);
  MEDSEG_CHECK_FILE(text.find_first_not_of(" \t\r\n") != std::string::npos, path, "empty JSON file");
  return parse_json_text<json>(text, path);
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_parts_atomic(path, {{bytes.data(), bytes.size()}});
}

void write_json(const std::string& path, const json& j, int indent) { write_file_atomic(path, j.dump(indent) + "\n"); }

}  // namespace medseg
