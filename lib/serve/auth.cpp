#include "serve/auth.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace medseg::serve {

std::string read_token_file(const std::string& path) {
  struct stat st {};
  MEDSEG_CHECK_FILE(::stat(path.c_str(), &st) == 0, path, "no such token file");
  MEDSEG_CHECK_FILE(S_ISREG(st.st_mode), path, "the token file is not a regular file");
  MEDSEG_CHECK_FILE((st.st_mode & 077) == 0, path, "the token file is readable by others; make it private (chmod 600)");
  MEDSEG_CHECK_FILE(st.st_size <= 4096, path, "the token file is over 4 KiB; it should hold one token");
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  const auto a = line.find_first_not_of(" \t\r\n"), b = line.find_last_not_of(" \t\r\n");
  MEDSEG_CHECK_FILE(a != std::string::npos, path, "the token file's first line is empty");
  const std::string token = line.substr(a, b - a + 1);
  MEDSEG_CHECK_FILE(token.size() >= 16, path, "the token is under 16 characters; use a long random one");
  return token;
}

bool bearer_matches(const std::string& header, const std::string& token) {
  const std::string expected = "Bearer " + token;
  // Every byte of the longer string is looked at; the length difference enters the result, not the time.
  const std::size_t n = std::max(header.size(), expected.size());
  unsigned diff = header.size() == expected.size() ? 0u : 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char a = i < header.size() ? static_cast<unsigned char>(header[i]) : 0;
    const unsigned char b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    diff |= static_cast<unsigned>(a ^ b);
  }
  return diff == 0;
}

}  // namespace medseg::serve
