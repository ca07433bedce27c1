// core/digest.h against FNV-1a's published 64-bit test vectors.
#include <gtest/gtest.h>

#include "core/digest.h"

TEST(Digest, Fnv1aKnownVectors) {
  EXPECT_EQ(medseg::fnv1a(std::string()), 0xcbf29ce484222325ULL);
  EXPECT_EQ(medseg::fnv1a(std::string("a")), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(medseg::fnv1a(std::string("foobar")), 0x85944171f73967e8ULL);
  // Chained buffers equal one buffer.
  EXPECT_EQ(medseg::fnv1a(std::string("bar"), medseg::fnv1a(std::string("foo"))), medseg::fnv1a(std::string("foobar")));
}
