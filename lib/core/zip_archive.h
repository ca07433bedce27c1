#pragma once
// Zip files on libzip (model zips, numpy .npz): reading entries (name, size, bytes,
// with libzip's own per-entry CRC check) and writing one in a single atomic step. Every error is a
// FileError naming the zip file (and the entry).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct zip;

namespace medseg {

// zlib's crc32 (the one zip files and Python's zlib.crc32 use) as 8 lowercase hex digits.
std::string crc32_hex(uint32_t crc);

struct Crc32Digest {
  uint64_t size = 0;
  uint32_t crc32 = 0;
};

// Size and CRC32 of a file, streamed. Throws FileError naming the file.
Crc32Digest crc32_digest_file(const std::string& path);

struct ZipEntry {
  uint64_t index = 0;
  std::string name;
  uint64_t size = 0;             // uncompressed, as the zip's directory records it
  uint64_t compressed_size = 0;  // the bytes it takes in the zip
  bool directory = false;
};

class ZipReader {
 public:
  // Opens with libzip's consistency checks. A missing, truncated or non-zip file, a folder, and a zip
  // that holds one name twice (naming it) throw FileError.
  explicit ZipReader(std::string path);
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }

  // The whole entry in memory; refuses entries larger than `max_bytes`.
  std::string read(const ZipEntry& e, uint64_t max_bytes) const;
  // Streams the entry into a new file `target`; returns what was written. Data beyond the size the
  // zip's directory records is refused as it arrives, not after it was written.
  Crc32Digest extract(const ZipEntry& e, const std::string& target) const;

 private:
  std::string path_;
  zip* z_ = nullptr;
  std::vector<ZipEntry> entries_;
};

class ZipWriter {
 public:
  // Nothing appears at `path` before commit(): libzip writes a temporary file and renames it.
  // Without `replace`, an existing `path` is refused.
  ZipWriter(std::string path, bool replace);
  ~ZipWriter();  // discards an uncommitted archive
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;

  // `compress` false stores the bytes as they are (checkpoints' float data barely deflates).
  void add_file(const std::string& name, const std::string& source, bool compress);
  void add_bytes(const std::string& name, std::string bytes, bool compress = true);
  void commit();

 private:
  std::string path_;
  zip* z_ = nullptr;
  std::vector<std::unique_ptr<std::string>> buffers_;  // alive until commit(): libzip reads them then
};

}  // namespace medseg
