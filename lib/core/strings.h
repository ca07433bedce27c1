#pragma once
// Small string helpers shared by the stages.
#include <string>

namespace medseg {

inline bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
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
