#pragma once
// Reading a program's output in tests: the line that names something, and how many lines there are.
#include <sstream>
#include <string>

namespace medseg::test {

// The first output line that holds `what` (a file, a flag, a key), or "" when none does.
inline std::string line_naming(const std::string& output, const std::string& what) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.find(what) != std::string::npos) return line;
  return "";
}

// The number of '\n'-terminated lines.
inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace medseg::test
