#include "optim/state_name.h"

#include <gtest/gtest.h>

namespace dt::optim {
namespace {

TEST(StateName, ReadsAKeysAndAPartsNames) {
  const auto key = parse_state_name("42.mom");
  ASSERT_TRUE(key);
  EXPECT_EQ(key->key, 42u);
  EXPECT_FALSE(key->per_part);
  EXPECT_EQ(key->slot, "mom");
  const auto part = parse_state_name("7/100/250.weight32");
  ASSERT_TRUE(part);
  EXPECT_EQ(part->key, 7u);
  EXPECT_TRUE(part->per_part);
  EXPECT_EQ(part->begin, 100);
  EXPECT_EQ(part->end, 250);
  EXPECT_EQ(part->slot, "weight32");
  EXPECT_EQ(part_state_name(7, 100, 250, "weight32"), "7/100/250.weight32");
}

TEST(StateName, RefusesWhatIsNeither) {
  for (const char* name : {"num_update", "", ".mom", "x.mom", "-1.mom", "1/2.mom", "1/2/.mom", "1/a/3.mom",
                           "123456789012345678901.mom", "1/2/1234567890123456789.mom"}) {
    bool too_large = true;
    EXPECT_FALSE(parse_state_name(name, &too_large)) << name;
    EXPECT_FALSE(too_large) << name;
  }
}

TEST(StateName, SaysWhenAKeyDoesNotFitIn64Bits) {
  bool too_large = false;
  EXPECT_FALSE(parse_state_name("99999999999999999999.mom", &too_large));
  EXPECT_TRUE(too_large);
  EXPECT_TRUE(parse_state_name("18446744073709551615.mom", &too_large));
  EXPECT_FALSE(too_large);
}

}  // namespace
}  // namespace dt::optim
