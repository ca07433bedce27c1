#pragma once
// A job's upload (POST /v1/models/{name}/jobs): the request body, or each part of a multipart body, written
// to the job's private input folder as case_0000<ext>, case_0001<ext>, ... in the order the parts come. The
// extension comes from the bytes (a gzip stream is .nii.gz, a NIfTI-1 header .nii, a zip .zip), never from
// anything the client names: no path or file name is taken from a request.
#include <cstdint>
#include <string>
#include <vector>

namespace medseg::serve {

// What the first bytes of an upload are: ".nii.gz", ".nii", ".zip", or "" (none of these).
std::string sniff_extension(const char* data, std::size_t n);

// Writes one upload part after the other into `folder`, counting bytes against `max_bytes`.
class UploadWriter {
 public:
  UploadWriter(std::string folder, int64_t max_bytes) : folder_(std::move(folder)), max_(max_bytes) {}
  ~UploadWriter();
  UploadWriter(const UploadWriter&) = delete;
  UploadWriter& operator=(const UploadWriter&) = delete;

  void begin_part();  // the next channel
  // False (and error() says why) when the upload passes max_bytes or cannot be written.
  bool write(const char* data, std::size_t n);
  // Closes the last part; the files written, in order. Throws Error for an empty part or unknown contents.
  std::vector<std::string> finish();
  int64_t bytes() const { return bytes_; }
  bool too_large() const { return too_large_; }

 private:
  bool open_with(const char* data, std::size_t n);
  void close();

  std::string folder_;
  int64_t max_;
  int64_t bytes_ = 0;
  bool too_large_ = false;
  int fd_ = -1;
  std::vector<std::string> files_;
  std::vector<int64_t> part_bytes_;
  std::string head_;  // a part's first bytes, until there are enough to tell its kind
  bool in_part_ = false;
};

}  // namespace medseg::serve
