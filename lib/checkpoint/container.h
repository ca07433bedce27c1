#pragma once
// The on-disk checkpoint container ("MEDSEGCK", docs/checkpoints.md): a JSON header describing
// named tensors, the raw little-endian bytes of each distinct storage once, and a CRC32 trailer.
// Tensors that share a storage (aliases) are written once and share a storage again after reading.
// No pickling: only tensors and JSON, so the file is readable from Python with a few lines.
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace medseg::checkpoint {

inline constexpr char kCheckpointMagic[8] = {'M', 'E', 'D', 'S', 'E', 'G', 'C', 'K'};
inline constexpr uint32_t kCheckpointFormatVersion = 1;

// Ordered list of named tensors; order is kept on disk.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// What a container holds: free JSON metadata and named tensors (any device; read back on CPU).
struct TensorArchive {
  nlohmann::json meta = nlohmann::json::object();
  NamedTensors tensors;
};

// Summary of one stored storage ("blob") as recorded in the header.
struct BlobInfo {
  std::string dtype;
  int64_t offset = 0;  // from the start of the data section
  int64_t nbytes = 0;
};

// Writes atomically (temp file in the same folder, fsync, rename, fsync of the folder), streaming
// each storage to disk. Throws FileError naming the file.
void write_archive(const std::string& path, const TensorArchive& archive);

// Reads and verifies magic, version, header and CRC32. Throws FileError naming the file and the
// problem for a missing, truncated, tampered or foreign file.
TensorArchive read_archive(const std::string& path);

// Header only (no tensor bytes, no checksum verification): for `medseg_checkpoint info`.
struct ArchiveHeader {
  uint32_t version = 0;
  nlohmann::json header;  // {"meta":..., "blobs":[...], "tensors":[...]}
  int64_t file_size = 0;
};
ArchiveHeader read_archive_header(const std::string& path);

// dtype <-> name used in the header ("float32", "int64", ...). Throws Error for unsupported types.
std::string dtype_name(c10::ScalarType t);
c10::ScalarType dtype_from_name(const std::string& name);

// Bytes a tensor set would occupy if aliases were stored separately vs once.
struct AliasStats {
  int64_t unique_bytes = 0;
  int64_t total_bytes = 0;  // sum over keys
  int64_t unique_storages = 0;
};
AliasStats alias_stats(const NamedTensors& tensors);

}  // namespace medseg::checkpoint
