#pragma once
// Small string helpers shared by the stages.
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace medseg {

inline bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// The values of any container (strings, integers, anything operator<< prints) with `sep` between
// them: join(std::vector<int>{1, 2}, ", ") is "1, 2". Numbers print as operator<< prints them.
template <class Container>
std::string join(const Container& values, const std::string& sep) {
  std::ostringstream out;
  bool first = true;
  for (const auto& v : values) {
    if (!first) out << sep;
    out << v;
    first = false;
  }
  return out.str();
}

// The first value of `values` that an earlier one equals, or nothing when all differ: for lists
// where a repeat would silently count twice (folds, configurations to compare).
inline std::optional<std::string> first_repeated(const std::vector<std::string>& values) {
  std::set<std::string> seen;
  for (const std::string& v : values)
    if (!seen.insert(v).second) return v;
  return std::nullopt;
}

// An exception message as one line for the user: LibTorch's c10::Error appends "Exception raised
// from ..." and a C++ backtrace to its message; that part is dropped, and any other line break
// (c10's context lines) becomes "; ".
inline std::string one_line(const std::string& what) {
  std::string msg = what.substr(0, what.find("\nException raised from"));
  std::string out;
  for (std::size_t i = 0; i < msg.size(); ++i) {
    if (msg[i] != '\n') {
      out += msg[i];
      continue;
    }
    while (i + 1 < msg.size() && (msg[i + 1] == ' ' || msg[i + 1] == '\n')) ++i;
    if (!out.empty() && i + 1 < msg.size()) out += "; ";
  }
  return out;
}

}  // namespace medseg
