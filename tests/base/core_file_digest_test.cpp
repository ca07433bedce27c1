// core/file_digest.h: the file's digest is the hash of its whole content however it is read in
// chunks, every byte position counts (an image of zeros never passes for the real one), and the rate
// a start-of-run check pays is printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "core/error.h"
#include "core/file_digest.h"
#include "support/test_support.h"

using medseg::content_hash;
using medseg::file_digest;

namespace {

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

}  // namespace

TEST(FileDigest, FileEqualsWholeContentAcrossChunkBoundaries) {
  medseg::test::TempDir d("fdig");
  // Sizes around the 32-byte block and the 1 MiB read chunk.
  for (size_t n : {size_t(0), size_t(1), size_t(31), size_t(32), size_t(33), size_t(1) << 20, (size_t(1) << 20) + 17}) {
    const std::string bytes = random_bytes(n, static_cast<unsigned>(n));
    std::ofstream(d / "f", std::ios::binary | std::ios::trunc) << bytes;
    const auto fd = file_digest(d / "f");
    EXPECT_EQ(fd.bytes, n);
    EXPECT_EQ(fd.hash, content_hash(bytes.data(), bytes.size())) << n;
  }
}

TEST(FileDigest, EveryByteCounts) {
  const std::string base = random_bytes(1000, 7);
  const uint64_t h = content_hash(base.data(), base.size());
  for (size_t i = 0; i < base.size(); ++i) {
    std::string changed = base;
    changed[i] = static_cast<char>(changed[i] ^ 1);
    ASSERT_NE(content_hash(changed.data(), changed.size()), h) << "byte " << i;
  }
  // Zeros of the same length, and zeros of other lengths, all differ.
  const std::string zeros(1000, '\0'), fewer(999, '\0');
  EXPECT_NE(content_hash(zeros.data(), zeros.size()), h);
  EXPECT_NE(content_hash(zeros.data(), zeros.size()), content_hash(fewer.data(), fewer.size()));
}

TEST(FileDigest, MissingFileNamesIt) {
  try {
    file_digest("/nonexistent/case.npy");
    FAIL() << "accepted";
  } catch (const medseg::FileError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/case.npy"), std::string::npos);
  }
}

TEST(FileDigest, RateInMemory) {
  const std::string bytes = random_bytes(size_t(64) << 20, 1);
  const auto t0 = std::chrono::steady_clock::now();
  volatile uint64_t h = content_hash(bytes.data(), bytes.size());
  (void)h;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("content_hash: %.2f GB/s over 64 MiB\n", 64.0 * 1048576 / 1e9 / s);
}
