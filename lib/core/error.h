#pragma once
// Errors thrown by the library. The CLIs catch them at the boundary and print one line.
#include <sstream>
#include <stdexcept>
#include <string>

namespace medseg {

// Any problem with user input or on-disk data. The message names the file and the problem.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad or unreadable file contents (corrupt volume, bad JSON, checksum mismatch...).
class FileError : public Error {
 public:
  FileError(const std::string& path, const std::string& problem) : Error(path + ": " + problem), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A long computation stopped because its caller asked (a progress callback returned false).
class Cancelled : public Error {
 public:
  using Error::Error;
};

// The parts streamed one after the other (c10::str's job, for medseg's messages): MEDSEG_CHECK's
// message, or one built for a throw that is not a check.
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  ((out << parts), ...);
  return out.str();
}

}  // namespace medseg

// Throws medseg::Error whose message is the parts streamed in order unless `cond` holds, like
// TORCH_CHECK (whose c10::Error would carry a source location and backtrace the user must not see):
//   MEDSEG_CHECK(n > 0, "network: ", name, " needs at least 1 stage, got ", n);
// The parts are evaluated only when the check fails. They print as operator<< prints them (a double
// 0.5 as "0.5", not std::to_string's "0.500000"; a std::filesystem::path in quotes: pass .string()).
#define MEDSEG_CHECK(cond, ...)                                        \
  do {                                                                 \
    if (!(cond)) throw ::medseg::Error(::medseg::concat(__VA_ARGS__)); \
  } while (false)

// The same for a problem with one file: throws medseg::FileError(path, message) unless `cond` holds, so the message
// reads "<path>: <parts>" and the catcher can ask the error for its path (as TORCH_CHECK_VALUE and TORCH_CHECK_INDEX
// name the kind of error):
//   MEDSEG_CHECK_FILE(shape.size() == 3, path, "expected 3 dimensions, got ", shape.size());
// `path` is anything that converts to std::string (a std::filesystem::path: pass .string()).
#define MEDSEG_CHECK_FILE(cond, path, ...)                                         \
  do {                                                                             \
    if (!(cond)) throw ::medseg::FileError((path), ::medseg::concat(__VA_ARGS__)); \
  } while (false)
