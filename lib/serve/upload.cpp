#include "serve/upload.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace medseg::serve {

namespace {

constexpr std::size_t kSniffBytes = 348;  // a NIfTI-1 header's magic ends at byte 348

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

std::string sniff_extension(const char* d, std::size_t n) {
  if (n >= 2 && static_cast<unsigned char>(d[0]) == 0x1f && static_cast<unsigned char>(d[1]) == 0x8b) return ".nii.gz";
  if (n >= 4 && std::memcmp(d, "PK\x03\x04", 4) == 0) return ".zip";
  if (n >= 348 && (std::memcmp(d + 344, "n+1\0", 4) == 0)) return ".nii";
  return "";
}

UploadWriter::~UploadWriter() { close(); }

void UploadWriter::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void UploadWriter::begin_part() {
  close();
  if (in_part_ && !head_.empty()) open_with(head_.data(), head_.size());  // a short part: written as it is
  close();
  head_.clear();
  in_part_ = true;
  part_bytes_.push_back(0);
}

bool UploadWriter::open_with(const char* data, std::size_t n) {
  std::string ext = sniff_extension(data, n);
  if (ext.empty()) ext = ".unknown";
  char name[32];
  std::snprintf(name, sizeof name, "case_%04zu", files_.size());
  const std::string path = folder_ + "/" + name + ext;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0) return false;
  files_.push_back(path);
  return write_all(fd_, data, n);
}

bool UploadWriter::write(const char* data, std::size_t n) {
  if (!in_part_) begin_part();
  bytes_ += static_cast<int64_t>(n);
  part_bytes_.back() += static_cast<int64_t>(n);
  if (bytes_ > max_) {
    too_large_ = true;
    return false;
  }
  if (fd_ >= 0) return write_all(fd_, data, n);
  head_.append(data, n);
  if (head_.size() < kSniffBytes) return true;
  const bool ok = open_with(head_.data(), head_.size());
  head_.clear();
  return ok;
}

std::vector<std::string> UploadWriter::finish() {
  if (!head_.empty() && fd_ < 0) open_with(head_.data(), head_.size());
  head_.clear();
  close();
  for (std::size_t k = 0; k < part_bytes_.size(); ++k)
    MEDSEG_CHECK(part_bytes_[k] != 0, "part ", k, " of the upload is empty");
  MEDSEG_CHECK(!files_.empty(), "the request has no body: send a .nii.gz, a .nii or a zip of a DICOM series");
  for (std::size_t k = 0; k < files_.size(); ++k)
    MEDSEG_CHECK(files_[k].size() < 8 || files_[k].compare(files_[k].size() - 8, 8, ".unknown") != 0,
                 files_.size() > 1 ? concat("part ", k, " of the upload") : std::string("the upload"),
                 " is neither NIfTI (.nii, .nii.gz) nor a zip of a DICOM series");
  return files_;
}

}  // namespace medseg::serve
