#pragma once
// Hand-made NIfTI defects: a valid file written by io::write_image, decompressed, given bad
// header values at the byte offsets of nifti1.h, and written back (gzip for .nii.gz). The file
// format is patched directly so the test does not depend on the reader under test.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>

namespace medseg::test::nifti {

// NIfTI-1 header offsets (nifti1.h).
constexpr size_t kDim = 40, kPixdim = 76, kQformCode = 252, kSformCode = 254, kQuaternB = 256, kQoffsetX = 268,
                 kSrowX = 280, kSrowY = 296, kSrowZ = 312;

inline bool is_gz(const std::string& path) { return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0; }

// The file's bytes, decompressed when it is gzip (zlib reads plain files as they are).
inline std::string read_bytes(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  if (n < 0) throw std::runtime_error("cannot read " + path);
  return out;
}

// `bytes` as one gzip member (windowBits 15 + 16 selects the gzip wrapper).
inline std::string gzip_bytes(const std::string& bytes) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  return out;
}

// Writes `bytes` to `path`, gzip-compressed when the name ends in .gz.
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << (is_gz(path) ? gzip_bytes(bytes) : bytes);
  if (!f.flush()) throw std::runtime_error("cannot write " + path);
}

template <class T>
void poke(std::string& bytes, size_t offset, T value) {
  std::memcpy(&bytes[offset], &value, sizeof(T));
}

template <class T>
T peek(const std::string& bytes, size_t offset) {
  T v;
  std::memcpy(&v, &bytes[offset], sizeof(T));
  return v;
}

// Applies `patch` (a function of the decompressed bytes) to the NIfTI file at `path` in place.
template <class F>
void patch_file(const std::string& path, F&& patch) {
  std::string b = read_bytes(path);
  if (b.size() < 352 || peek<int32_t>(b, 0) != 348)
    throw std::runtime_error(path + " is not a little-endian NIfTI-1 file");
  patch(b);
  write_bytes(path, b);
}

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

// The same NIfTI-1 file in the other byte order: every numeric header field and every voxel
// swapped (the 4 extension bytes after the header are flags, not numbers).
inline std::string byte_swapped(const std::string& b) {
  std::string s = b;
  auto swap_at = [&](size_t at, size_t width) { std::reverse(s.begin() + at, s.begin() + at + width); };
  swap_at(0, 4);                                            // sizeof_hdr
  swap_at(32, 4);                                           // extents
  swap_at(36, 2);                                           // session_error
  for (size_t at = 40; at < 56; at += 2) swap_at(at, 2);    // dim[8]
  for (size_t at = 56; at < 68; at += 4) swap_at(at, 4);    // intent_p1..3
  for (size_t at = 68; at < 76; at += 2) swap_at(at, 2);    // intent_code, datatype, bitpix, slice_start
  for (size_t at = 76; at < 120; at += 4) swap_at(at, 4);   // pixdim[8], vox_offset, scl_slope, scl_inter
  swap_at(120, 2);                                          // slice_end
  for (size_t at = 124; at < 148; at += 4) swap_at(at, 4);  // cal_max .. glmin
  for (size_t at = 252; at < 256; at += 2) swap_at(at, 2);  // qform_code, sform_code
  for (size_t at = 256; at < 328; at += 4) swap_at(at, 4);  // quatern, qoffset, srow
  const size_t offset = static_cast<size_t>(peek<float>(b, 108));
  const size_t width = static_cast<size_t>(peek<int16_t>(b, 72) / 8);
  for (size_t at = offset; width > 1 && at + width <= s.size(); at += width) swap_at(at, width);
  return s;
}

}  // namespace medseg::test::nifti
