#include "io/nifti_check.h"

#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.h"
#include "io/nifti_header.h"

namespace medseg::io {
namespace {

bool has_ending(const std::string& p, const char* e) {
  std::string s = p;
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string end(e);
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

template <class T>
T load(const unsigned char* p, bool swap) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if (swap) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    std::memcpy(&v, b, sizeof(T));
  }
  return v;
}

struct Layout {
  uint64_t total = 0;   // header + voxel bytes
  uint64_t offset = 0;  // first voxel byte
  int float_bytes = 0;  // 4 or 8 for float32/float64 data, else 0
  bool swap = false;
};

// Counts non-finite floats in a stream of voxel bytes delivered in arbitrary chunks.
class NonFiniteCounter {
 public:
  explicit NonFiniteCounter(const Layout& l) : l_(l) {}
  void feed(const unsigned char* p, size_t n, uint64_t at) {
    if (!l_.float_bytes) return;
    const uint64_t end = at + n;
    if (end <= l_.offset) return;
    const size_t skip = at < l_.offset ? static_cast<size_t>(l_.offset - at) : 0;
    for (size_t i = skip; i < n; ++i) {
      carry_[fill_++] = p[i];
      if (fill_ == static_cast<size_t>(l_.float_bytes)) {
        count_ += l_.float_bytes == 4 ? !std::isfinite(load<float>(carry_, l_.swap))
                                      : !std::isfinite(load<double>(carry_, l_.swap));
        fill_ = 0;
      }
    }
  }
  int64_t count() const { return count_; }

 private:
  Layout l_;
  unsigned char carry_[8] = {0};
  size_t fill_ = 0;
  int64_t count_ = 0;
};

// Layout of a NIfTI-1 or NIfTI-2 file from its header; refuses geometry ITK cannot take.
Layout layout_of(const std::string& path, const unsigned char* bytes, size_t n) {
  const NiftiHeader h = parse_nifti_header(path, bytes, n);
  MEDSEG_CHECK_FILE(h.ndim >= 1 && h.ndim <= 7, path, "corrupt NIfTI", h.version == 2 ? "-2" : "",
                    " header (dim[0]=", h.ndim, ")");
  MEDSEG_CHECK_FILE(h.bitpix > 0 && h.bitpix % 8 == 0, path, "corrupt NIfTI header (bitpix=", h.bitpix, ")");
  const std::string geometry = nifti_geometry_problem(h);
  MEDSEG_CHECK_FILE(geometry.empty(), path, "bad geometry in the NIfTI header: ", geometry);
  // The byte count must not wrap around: NIfTI-2 dims (2^32, 2^32) would come out as 0 voxels,
  // pass the size check, and leave ITK to allocate what the header declares.
  uint64_t image_bytes = static_cast<uint64_t>(h.bitpix / 8);
  for (int64_t i = 1; i <= h.ndim; ++i)
    MEDSEG_CHECK_FILE(
        !__builtin_mul_overflow(image_bytes, static_cast<uint64_t>(std::max<int64_t>(1, h.dim[static_cast<size_t>(i)])),
                                &image_bytes),
        path, "corrupt NIfTI header: the image size its dimensions declare exceeds 2^64 bytes");
  Layout l;
  // NIfTI-1 stores vox_offset as a float; the data never starts inside the 348+4 header bytes.
  l.offset = h.version == 1 ? static_cast<uint64_t>(std::max<int64_t>(352, h.vox_offset))
                            : static_cast<uint64_t>(std::max<int64_t>(0, h.vox_offset));
  MEDSEG_CHECK_FILE(!__builtin_add_overflow(l.offset, image_bytes, &l.total), path,
                    "corrupt NIfTI header: the image size its dimensions declare exceeds 2^64 bytes");
  l.float_bytes = h.datatype == 16 ? 4 : (h.datatype == 64 ? 8 : 0);  // DT_FLOAT32, DT_FLOAT64
  l.swap = h.swapped;
  return l;
}

std::string truncated(uint64_t have, uint64_t want) {
  return concat("truncated: holds ", have, " of the ", want, " bytes its header describes");
}

}  // namespace

int64_t check_nifti_complete(const std::string& path) {
  const bool gz = has_ending(path, ".nii.gz");
  if (!gz && !has_ending(path, ".nii")) return 0;
  gzFile f = gzopen(path.c_str(), "rb");  // zlib reads uncompressed files transparently
  MEDSEG_CHECK_FILE(f, path, "cannot open");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> guard(f, gzclose);
  std::vector<unsigned char> buf(1 << 20);
  uint64_t total = 0;
  Layout layout;
  std::unique_ptr<NonFiniteCounter> nonfinite;
  for (;;) {
    const int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      throw FileError(path, std::string(gz ? "corrupt gzip data (" : "read error (") + (msg ? msg : "?") + ")");
    }
    if (total == 0 && n > 0) {
      layout = layout_of(path, buf.data(), static_cast<size_t>(n));
      nonfinite = std::make_unique<NonFiniteCounter>(layout);
    }
    if (n == 0) break;
    nonfinite->feed(buf.data(), static_cast<size_t>(n), total);
    total += static_cast<uint64_t>(n);
  }
  int code = 0;
  gzerror(f, &code);
  MEDSEG_CHECK_FILE(code == Z_OK || code == Z_BUF_ERROR, path, "corrupt gzip data");
  // gzread stops at a truncated stream with Z_BUF_ERROR; the byte count tells where.
  const std::string after = gz ? " after decompression" : "";
  MEDSEG_CHECK_FILE(total != 0, path, std::string(code == Z_BUF_ERROR ? "truncated" : "empty"),
                    ": no NIfTI header (0 bytes", after, ")");
  MEDSEG_CHECK_FILE(total >= layout.total, path, truncated(total, layout.total), (gz ? " (after decompression)" : ""));
  MEDSEG_CHECK_FILE(code != Z_BUF_ERROR, path, "truncated gzip stream: the ", total,
                    " bytes of image data are all there but the gzip end (checksum) is missing");
  return nonfinite ? nonfinite->count() : 0;
}

}  // namespace medseg::io
