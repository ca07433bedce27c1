#include "core/path_component.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/strings.h"

namespace medseg {

namespace {

// The length of the well-formed UTF-8 sequence starting at value[i] (RFC 3629: no overlong forms, no
// surrogates, nothing beyond U+10FFFF), 0 when there is none.
size_t utf8_sequence(const std::string& v, size_t i) {
  // #lizard forgives: RFC 3629's table of lead-byte ranges reads best as one list of cases
  const auto b = [&](size_t k) { return k < v.size() ? static_cast<unsigned char>(v[k]) : 0u; };
  const unsigned c = b(i);
  const auto cont = [&](size_t k) { return (b(k) & 0xc0) == 0x80; };
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return b(i + 1) >= lo && b(i + 1) <= hi && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return b(i + 1) >= lo && b(i + 1) <= hi && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string printable(const std::string& value) {
  std::string out;
  for (size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    const size_t n = utf8_sequence(value, i);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else {
      out.append(value, i, n);
      i += n;
    }
  }
  return out;
}

std::string path_component_problem(const std::string& v) {
  if (v.empty()) return "it is empty";
  if (v == "." || v == "..") return concat("it is '", v, "'");
  if (v.find('/') != std::string::npos) return "it contains '/'";
  if (v.find('\\') != std::string::npos) return "it contains '\\'";
  for (unsigned char c : v)
    if (c < 0x20 || c == 0x7f) return "it contains a control character";
  if (v.size() > 255) return "it is longer than 255 bytes";
  return "";
}

void check_path_component(const std::string& value, const std::string& what, const std::string& file) {
  const std::string why = path_component_problem(value);
  if (why.empty()) return;
  const std::string msg = concat(what, " '", printable(value), "' is not a valid name (", why,
                                 "; it must be a single file or folder name)");
  MEDSEG_CHECK(!file.empty(), msg);
  throw FileError(file, msg);
}

std::string parse_fold(const std::string& fold) {
  const bool digits = !fold.empty() && fold.size() <= 9 &&
                      std::all_of(fold.begin(), fold.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (fold == "all") return fold;
  MEDSEG_CHECK(digits, "fold must be a non-negative integer or 'all', got '", printable(fold), "'");
  return std::to_string(std::stol(fold));
}

std::vector<std::string> parse_folds(const std::vector<std::string>& folds, const std::string& flag) {
  std::vector<std::string> out;
  for (const std::string& f : folds) out.push_back(parse_fold(f));
  const auto twice = first_repeated(out);
  MEDSEG_CHECK(!twice, flag, " ", printable(join(folds, " ")), ": fold ", *twice, " is given twice");
  return out;
}

}  // namespace medseg
