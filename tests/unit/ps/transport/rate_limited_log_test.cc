#include "ps/transport/rate_limited_log.h"

#include <gtest/gtest.h>

#include <string>

namespace dt::ps {
namespace {

TEST(PsRateLimitedLog, PrintsABurstThenCountsWhatItLeavesOut) {
  RateLimitedLog log("rate-limited-log test", 3, 3600.0);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 10; ++i) log.print("line " + std::to_string(i));
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("rate-limited-log test: line 0\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("line 2\n"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("line 3\n"), std::string::npos) << printed;
  EXPECT_EQ(log.suppressed(), 7u);
}

TEST(PsRateLimitedLog, ANewWindowSaysHowManyWereLeftOut) {
  RateLimitedLog log("rate-limited-log test", 1, 0.0);
  testing::internal::CaptureStderr();
  log.print("first");
  log.print("second");  // a zero-length window: each line opens a new one
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("second"), std::string::npos) << printed;
  EXPECT_EQ(log.suppressed(), 0u);
}

}  // namespace
}  // namespace dt::ps
