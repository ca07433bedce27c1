#include "core/file_digest.h"

#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace medseg {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL, kP3 = 0x165667B19E3779F9ULL,
                   kP4 = 0x85EBCA77C2B2AE63ULL, kP5 = 0x27D4EB2F165667C5ULL;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t mix(uint64_t acc, uint64_t in) { return rotl(acc + in * kP2, 31) * kP1; }
inline uint64_t word(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Incremental form, so a file is hashed in chunks with the result of hashing it whole.
class Hasher {
 public:
  explicit Hasher(uint64_t seed) : lanes_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1} {}
  void update(const unsigned char* p, std::size_t n) {
    total_ += n;
    if (tail_n_ > 0) {  // complete a pending 32-byte block first
      const std::size_t take = std::min<std::size_t>(32 - tail_n_, n);
      std::memcpy(tail_ + tail_n_, p, take);
      tail_n_ += take;
      p += take;
      n -= take;
      if (tail_n_ < 32) return;
      block(tail_);
      tail_n_ = 0;
    }
    for (; n >= 32; p += 32, n -= 32) block(p);
    std::memcpy(tail_, p, n);
    tail_n_ = n;
  }
  uint64_t finish() const {
    uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
    for (uint64_t l : lanes_) h = (h ^ mix(0, l)) * kP1 + kP4;
    h += total_;
    std::size_t i = 0;
    for (; i + 8 <= tail_n_; i += 8) h = rotl(h ^ mix(0, word(tail_ + i)), 27) * kP1 + kP4;
    for (; i < tail_n_; ++i) h = rotl(h ^ (tail_[i] * kP5), 11) * kP1;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    return h ^ (h >> 32);
  }

 private:
  void block(const unsigned char* p) {
    for (int l = 0; l < 4; ++l) lanes_[l] = mix(lanes_[l], word(p + 8 * l));
  }
  uint64_t lanes_[4];
  unsigned char tail_[32] = {};
  std::size_t tail_n_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

uint64_t content_hash(const void* data, std::size_t n, uint64_t seed) {
  Hasher h(seed);
  h.update(static_cast<const unsigned char*>(data), n);
  return h.finish();
}

FileDigest file_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MEDSEG_CHECK_FILE(in, path, "cannot open to compute its digest");
  Hasher h(0);
  std::vector<char> buf(std::size_t(1) << 20);
  FileDigest d;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    h.update(reinterpret_cast<const unsigned char*>(buf.data()), got);
    d.bytes += got;
  }
  MEDSEG_CHECK_FILE(!in.bad(), path, "read failed while computing its digest");
  d.hash = h.finish();
  return d;
}

}  // namespace medseg
