// The stall inspector's watch (core/stall_watch.h): once per stall, the
// workers named, a change of them, "resumed", nothing while waits are young.
#include "core/stall_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/log.h"

namespace dt::core {
namespace {

std::vector<std::string>* g_lines = nullptr;

void collect(LogLevel, const char* facility, const char* message, void*) {
  if (g_lines != nullptr) g_lines->push_back(std::string(facility) + ": " + message);
}

class StallWatchTest : public testing::Test {
 protected:
  void SetUp() override {
    g_lines = &lines;
    set_log_handler(LogLevel::kInfo, collect, nullptr);
  }
  void TearDown() override {
    set_log_handler(LogLevel::kInfo, nullptr, nullptr);
    g_lines = nullptr;
  }
  std::vector<std::string> lines;
  std::vector<OpenWait> waits;
  std::vector<std::vector<int>> named;
  StallWatch::Clock::time_point t0 = StallWatch::Clock::now();
  StallWatch::Clock::time_point at(double s) {
    return t0 + std::chrono::duration_cast<StallWatch::Clock::duration>(std::chrono::duration<double>(s));
  }
};

TEST_F(StallWatchTest, LogsOncePerStallNamesWorkersAndResumes) {
  StallWatch watch(
      "server 0", 2.0, [this] { return waits; }, [this](const std::vector<int>& w) { named.push_back(w); });
  waits = {{"k3 r5", "round 5 of key 3 [0, 10) waits for workers {1}", {1}}};
  EXPECT_EQ(watch.check(at(0)), 0u);
  EXPECT_EQ(watch.check(at(1.9)), 0u);
  EXPECT_TRUE(lines.empty());
  EXPECT_EQ(watch.check(at(2.1)), 1u);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("server 0: stall inspector: waiting since "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("for workers {1}: round 5 of key 3"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("(2.1 s,"), std::string::npos) << lines[0];
  // The same stall: no second line.
  watch.check(at(5));
  EXPECT_EQ(lines.size(), 1u);
  // The round moved: a new identity, young again, so the stall is over.
  waits = {{"k3 r6", "round 6 of key 3 [0, 10) waits for workers {0}", {0}}};
  EXPECT_EQ(watch.check(at(6)), 0u);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("stall inspector: resumed after waiting 6.0 s"), std::string::npos) << lines[1];
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0], std::vector<int>{1});
  EXPECT_TRUE(named[1].empty());
}

TEST_F(StallWatchTest, ANewlyKnownWorkerIsLoggedAgainAndReportedWaitsCountFromTheirAge) {
  StallWatch watch("worker 0", 2.0, [this] { return waits; });
  waits = {{"m1", "pull from server 0: key 3 round 5", {}}};
  watch.check(at(0));
  watch.check(at(2.5));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("for workers not known here"), std::string::npos) << lines[0];
  // The scheduler's news names worker 1: one more line, naming it.
  waits[0].waits_for = {1};
  watch.check(at(3));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("for workers {1}"), std::string::npos) << lines[1];
  // A wait reported as already old is late at once.
  StallWatch scheduler("scheduler", 2.0, [] {
    OpenWait w{"server 0 {1}", "server 0's dist_sync rounds wait for workers {1}", {1}};
    w.waited_s = 2.0;
    return std::vector<OpenWait>{w};
  });
  EXPECT_EQ(scheduler.check(at(0)), 1u);
}

TEST_F(StallWatchTest, OffAtZeroAndTheThreadStopsPromptly) {
  StallWatch off("server 0", 0, [] { return std::vector<OpenWait>{{"a", "a", {1}}}; });
  off.start();
  EXPECT_EQ(off.check(at(100)), 0u);
  EXPECT_DOUBLE_EQ(StallWatch::period_s(60), 1.0);
  EXPECT_DOUBLE_EQ(StallWatch::period_s(2), 0.2);
  EXPECT_DOUBLE_EQ(StallWatch::period_s(0.1), 0.05);
  const auto begin = std::chrono::steady_clock::now();
  {
    StallWatch on("server 0", 60, [] { return std::vector<OpenWait>{}; });
    on.start();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace dt::core
