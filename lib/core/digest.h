#pragma once
// FNV-1a, 64 bit: a cheap digest for "do these ranks hold the same bytes" checks (not for security,
// not stored on disk). Feed several buffers by passing the previous result as `h`.
#include <cstddef>
#include <cstdint>
#include <string>

namespace medseg {

constexpr uint64_t kFnv1aSeed = 14695981039346656037ULL;  // the FNV-1a 64-bit offset basis

inline uint64_t fnv1a(const void* data, std::size_t n, uint64_t h = kFnv1aSeed) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

inline uint64_t fnv1a(const std::string& s, uint64_t h = kFnv1aSeed) { return fnv1a(s.data(), s.size(), h); }

}  // namespace medseg
