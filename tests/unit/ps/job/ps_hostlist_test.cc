// Slurm host lists as SLURM_JOB_NODELIST holds them.
#include <gtest/gtest.h>

#include "core/error.h"
#include "ps/job/hostlist.h"

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;
using Hosts = std::vector<std::string>;

std::string error_of(const std::string& list) {
  try {
    expand_hostlist(list);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << list;
    return e.what();
  }
  return "accepted";
}

TEST(PsHostlist, PlainNamesAndRangesWithPadding) {
  EXPECT_EQ(expand_hostlist("gpu-a1"), Hosts{"gpu-a1"});
  EXPECT_EQ(expand_hostlist("node[01-03,7],gpu-a1"), (Hosts{"node01", "node02", "node03", "node7", "gpu-a1"}));
  EXPECT_EQ(expand_hostlist("n[8-11]"), (Hosts{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand_hostlist("n[098-101]"), (Hosts{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_hostlist("n[0-1]"), (Hosts{"n0", "n1"}));  // "0" alone is no padding
  EXPECT_EQ(expand_hostlist("n[5]"), Hosts{"n5"});
  EXPECT_EQ(expand_hostlist("a,b,c"), (Hosts{"a", "b", "c"}));
}

TEST(PsHostlist, SeveralBracketsAndSuffixes) {
  EXPECT_EQ(expand_hostlist("rack[1-2]-n[01-02]"), (Hosts{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
  EXPECT_EQ(expand_hostlist("n[1-2].cluster,login"), (Hosts{"n1.cluster", "n2.cluster", "login"}));
  EXPECT_EQ(expand_hostlist("[1-2]x"), (Hosts{"1x", "2x"}));
}

TEST(PsHostlist, MalformedListsAreRefusedQuotingTheList) {
  for (const char* bad : {"", "a,,b", ",a", "a,", "n[1-3", "n1-3]", "n[[1-2]]", "n[]", "n[a-b]", "n[3-1]", "n[1-]",
                          "n[-2]", "n[1,,2]", "a b", "n[1-2]]"}) {
    const std::string text = error_of(bad);
    EXPECT_NE(text, "accepted") << bad;
    EXPECT_NE(text.find(std::string("\"") + bad + "\""), std::string::npos) << bad << ": " << text;
  }
}

TEST(PsHostlist, HugeExpansionsAreRefused) {
  EXPECT_NE(error_of("n[1-99999999]").find("more than"), std::string::npos);
  EXPECT_NE(error_of("a[1-1000]b[1-1000]c[1-2]").find("more than"), std::string::npos);
  EXPECT_NE(error_of("n[1-99999999999999999999]").find("too large"), std::string::npos);
  EXPECT_EQ(expand_hostlist("n[1-1000]").size(), 1000u);
}

}  // namespace
}  // namespace dt::ps
