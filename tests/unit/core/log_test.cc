// The one log channel (core/log.h): the stderr form, levels, a handler.
#include "core/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "error_code_of.h"

namespace dt::core {
namespace {

struct Line {
  LogLevel level;
  std::string facility;
  std::string message;
};

void collect(LogLevel level, const char* facility, const char* message, void* user) {
  static_cast<std::vector<Line>*>(user)->push_back({level, facility, message});
}

// Each test leaves the channel as an unset environment has it: stderr, info.
class CoreLog : public testing::Test {
 protected:
  void TearDown() override { set_log_handler(LogLevel::kInfo, nullptr, nullptr); }
};

TEST_F(CoreLog, StderrKeepsTheLibrarysLineForms) {
  set_log_handler(LogLevel::kTrace, nullptr, nullptr);
  testing::internal::CaptureStderr();
  log(LogLevel::kInfo, "server 1", "rejoined the job");
  log(LogLevel::kWarning, "", "no job secret");
  log(LogLevel::kError, "trainer", "gave up");
  log(LogLevel::kDebug, "scheduler", "node table published");
  logf(LogLevel::kTrace, "worker 0", "%d slices", 3);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "disttrain server 1: rejoined the job\n"
            "disttrain: warning: no job secret\n"
            "disttrain trainer: error: gave up\n"
            "disttrain[PS_VERBOSE]: scheduler: node table published\n"
            "disttrain[PS_VERBOSE]: worker 0: 3 slices\n");
}

TEST_F(CoreLog, LinesAboveTheLevelAreHeldBack) {
  set_log_handler(LogLevel::kWarning, nullptr, nullptr);
  EXPECT_TRUE(log_enabled(LogLevel::kError));
  EXPECT_TRUE(log_enabled(LogLevel::kWarning));
  EXPECT_FALSE(log_enabled(LogLevel::kInfo));
  EXPECT_FALSE(log_enabled(LogLevel::kNone));
  testing::internal::CaptureStderr();
  log(LogLevel::kInfo, "scheduler", "not shown");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(log_level(), LogLevel::kWarning);
}

TEST_F(CoreLog, AHandlerTakesTheLinesInsteadOfStderr) {
  std::vector<Line> lines;
  set_log_handler(LogLevel::kDebug, collect, &lines);
  testing::internal::CaptureStderr();
  log(LogLevel::kInfo, "allreduce", "worker 1 lost");
  log(LogLevel::kDebug, "scheduler", "connection 3 closed");
  log(LogLevel::kTrace, "scheduler", "held back");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].level, LogLevel::kInfo);
  EXPECT_EQ(lines[0].facility, "allreduce");
  EXPECT_EQ(lines[0].message, "worker 1 lost");
  EXPECT_EQ(lines[1].level, LogLevel::kDebug);
  set_log_handler(LogLevel::kInfo, nullptr, nullptr);
  testing::internal::CaptureStderr();
  log(LogLevel::kInfo, "allreduce", "back on stderr");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "disttrain allreduce: back on stderr\n");
  EXPECT_EQ(lines.size(), 2u);
}

TEST_F(CoreLog, LevelsParseByNameOrNumber) {
  EXPECT_EQ(parse_log_level("none"), LogLevel::kNone);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarning);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("5"), LogLevel::kTrace);
  std::string message;
  EXPECT_EQ(test_support::code_of([] { parse_log_level("loud"); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("DT_LOG_LEVEL"), std::string::npos) << message;
  EXPECT_STREQ(log_level_name(LogLevel::kInfo), "info");
}

}  // namespace
}  // namespace dt::core
