#include "core/atomic_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg {

namespace {

std::string errno_text() { return std::strerror(errno); }

void fsync_folder(const fs::path& dir) {
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace

AtomicWriter::AtomicWriter(std::string path) : path_(std::move(path)) {
  const fs::path target(path_);
  const fs::path dir = target.parent_path();
  if (!dir.empty()) fs::create_directories(dir);
  std::random_device rd;
  // pid + random: two processes (or threads) writing the same target never share a temp file.
  tmp_ =
      (dir / (target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd()))).string();
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  MEDSEG_CHECK_FILE(fd_ >= 0, tmp_, "cannot create: ", errno_text());
}

AtomicWriter::~AtomicWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicWriter::write(const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd_, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      throw FileError(path_, concat("write failed: ", errno_text()));
    }
    p += k;
    n -= static_cast<std::size_t>(k);
    written_ += static_cast<std::size_t>(k);
  }
}

void AtomicWriter::commit(bool durable) {
  MEDSEG_CHECK_FILE(!durable || ::fsync(fd_) == 0, path_, "fsync failed: ", errno_text());
  const int rc = ::close(fd_);
  fd_ = -1;
  MEDSEG_CHECK_FILE(rc == 0, path_, "close failed: ", errno_text());
  MEDSEG_CHECK_FILE(::rename(tmp_.c_str(), path_.c_str()) == 0, path_, "rename failed: ", errno_text());
  committed_ = true;
  if (durable) fsync_folder(fs::path(path_).parent_path());  // makes the rename itself durable
}

void write_parts_atomic(const std::string& path, const std::vector<ByteSpan>& parts, bool durable) {
  AtomicWriter w(path);
  for (const ByteSpan& part : parts) w.write(part.first, part.second);
  w.commit(durable);
}

void sync_filesystem(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  MEDSEG_CHECK_FILE(fd >= 0, folder, "cannot open: ", errno_text());
  const int rc = ::syncfs(fd);
  const std::string why = errno_text();
  ::close(fd);
  MEDSEG_CHECK_FILE(rc == 0, folder, "syncfs failed: ", why);
}

}  // namespace medseg
