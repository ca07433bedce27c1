#pragma once
// numpy .npy files (format 1.0 written; 1.0, 2.0 and 3.0 read): the magic "\x93NUMPY", major and
// minor version bytes, a little-endian header length (uint16 in 1.0, uint32 in 2.0/3.0), then an
// ASCII Python dict {'descr': '<f4', 'fortran_order': False, 'shape': (C, Z, Y, X), } padded with
// spaces and a final '\n' so that the data starts at a multiple of 64 bytes. The data follows in
// C order. medseg writes '<f4' (float32), '|i1' (int8) and '<i2' (int16).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace medseg::preprocessing {

struct NpyHeader {
  std::string descr;  // e.g. "<f4"
  bool fortran_order = false;
  std::vector<int64_t> shape;
  std::size_t data_offset = 0;  // bytes before the data
  int major = 1, minor = 0;
  int64_t numel() const;
  std::size_t item_size() const;  // from descr; 0 when unknown
};

// The full header (magic .. '\n'), format 1.0, 64-byte aligned.
std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape);

// Parses a header from the first `size` bytes of a file; throws FileError naming `path` for a
// missing magic, an unsupported version or a malformed dict.
NpyHeader parse_npy_header(const char* bytes, std::size_t size, const std::string& path);

// Reads a whole little-endian float32 ('<f4', C order) array, e.g. saved probabilities. Throws
// FileError naming `path` for a missing file, another dtype, Fortran order or truncated data.
std::vector<float> read_npy_float32(const std::string& path, std::vector<int64_t>& shape);

// Writes header + data to `path` atomically (temp file in the same folder, renamed); fsyncs the
// file first when `sync` (otherwise flush later with sync_filesystem, core/atomic_writer.h).
void write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data,
               std::size_t nbytes, bool sync = true);

}  // namespace medseg::preprocessing
