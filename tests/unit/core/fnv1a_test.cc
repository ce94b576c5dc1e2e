#include "core/fnv1a.h"

#include <gtest/gtest.h>

namespace dt::core {
namespace {

// The published FNV-1a 64 test vectors: the string keys of every kvstore and
// the seeded streams of every parameter depend on exactly these numbers.
TEST(Fnv1aTest, PublishedVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

// A byte above 0x7f is mixed in as itself, not sign-extended by a signed char.
TEST(Fnv1aTest, HighBytesAreUnsigned) { EXPECT_EQ(fnv1a64("\xff"), 0xaf64724c8602eb6eULL); }

}  // namespace
}  // namespace dt::core
