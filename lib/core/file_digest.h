#pragma once
// A fast 64-bit hash of a file's whole content, for "do these hosts hold the same bytes" checks at
// the start of a run (not for security, not stored). Four independent lanes of 8-byte words, so it
// runs at memory speed rather than at FNV-1a's one byte per multiply (docs/distributed.md gives the
// measured rate); every byte counts, so an image of zeros never matches the real one.
#include <cstddef>
#include <cstdint>
#include <string>

namespace medseg {

// Hash of `n` bytes; equal inputs give equal hashes on every host (byte order fixed: little endian
// words, the only layout medseg builds for).
uint64_t content_hash(const void* data, std::size_t n, uint64_t seed = 0);

struct FileDigest {
  uint64_t bytes = 0;
  uint64_t hash = 0;
};

// Reads the whole file. Throws FileError naming it when it cannot be read.
FileDigest file_digest(const std::string& path);

}  // namespace medseg
