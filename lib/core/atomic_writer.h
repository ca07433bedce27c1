#pragma once
// The one way medseg publishes a file: bytes go to a temp file next to the target, which rename()
// puts in place, so a reader of `path` sees either the previous file or the complete new one, even
// if the writer is SIGKILLed. JSON, the preprocessed case store and checkpoints all write through it.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace medseg {

class AtomicWriter {
 public:
  explicit AtomicWriter(std::string path);  // creates the folder and the temp file
  ~AtomicWriter();                          // removes the temp file unless commit() succeeded
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;

  void write(const void* data, std::size_t n);
  std::size_t written() const { return written_; }
  // close and rename over the target. With `durable`, fsync the file before and the folder after,
  // so the new content survives a power loss; bulk writers pass false and call sync_filesystem once.
  void commit(bool durable = true);

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  std::size_t written_ = 0;
  bool committed_ = false;
};

using ByteSpan = std::pair<const void*, std::size_t>;

// Writes the concatenation of `parts` atomically (see AtomicWriter::commit for `durable`).
void write_parts_atomic(const std::string& path, const std::vector<ByteSpan>& parts, bool durable = true);

// Flushes the filesystem that holds `folder` (syncfs): one flush after many non-durable writes.
void sync_filesystem(const std::string& folder);

}  // namespace medseg
