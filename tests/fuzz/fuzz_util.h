#pragma once
// Shared by the libFuzzer targets (docs/hardening.md). The readers under test take paths, so each
// input is written to a scratch file first (on tmpfs when /dev/shm exists, which keeps this cheap).
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace medseg::fuzz {

inline const std::string& scratch_dir() {
  // Never destroyed: the atexit cleanup below runs after static destructors would have.
  static const std::string* dir = [] {
    namespace fs = std::filesystem;
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const fs::path d = base / ("medseg_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    auto* s = new std::string(d.string());
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(*dir, ec);
    });
    return s;
  }();
  return *dir;
}

inline std::string write_scratch(const std::string& name, const void* data, std::size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// The input after its first byte as a scratch NIfTI file: image.nii.gz (gzip-compressed, so the
// fuzzer need not produce valid deflate streams) when the first byte is odd, else image.nii.
// `size` must be at least 1.
inline std::string write_scratch_nifti(const uint8_t* data, std::size_t size) {
  if (!(data[0] & 1)) return write_scratch("image.nii", data + 1, size - 1);
  const std::string path = scratch_dir() + "/image.nii.gz";
  gzFile f = gzopen(path.c_str(), "wb1");
  if (size > 1) gzwrite(f, data + 1, static_cast<unsigned>(size - 1));
  gzclose(f);
  return path;
}

// Runs a reader on hostile input. Refusing it with medseg::Error is the expected outcome. Any other
// exception is tolerated too (it is still one line from the CLI) unless MEDSEG_FUZZ_STRICT=1, which
// abort()s so that such inputs are collected as crashes: the CLIs' contract is an error that names
// the file, and only medseg::FileError promises that.
template <class F>
void refuse_or_accept(F&& read) {
  try {
    read();
  } catch (const medseg::Error&) {
  } catch (const std::exception& e) {
    static const bool strict = [] {
      const char* s = std::getenv("MEDSEG_FUZZ_STRICT");
      return s && std::string(s) == "1";
    }();
    if (strict) {
      std::fprintf(stderr, "non-medseg exception: %s\n", e.what());
      std::abort();
    }
  }
}

}  // namespace medseg::fuzz
