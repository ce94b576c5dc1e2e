// A thread's note of what it blocks on (core/wait_note.h), read by a stall
// watch: one wait per scope under its own id, logged once late, then
// "resumed".
#include "core/wait_note.h"

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

TEST(WaitNoteTest, EachScopeIsOneWaitUnderItsOwnId) {
  WaitNote note;
  EXPECT_TRUE(note.open({}).empty());
  std::string first;
  {
    const WaitNote::Scope noted(note, "NCCL collective call 1 on GPU 0");
    const std::vector<OpenWait> open = note.open({2});
    ASSERT_EQ(open.size(), 1u);
    EXPECT_EQ(open[0].what, "NCCL collective call 1 on GPU 0");
    EXPECT_EQ(open[0].waits_for, std::vector<int>{2});
    first = open[0].id;
  }
  EXPECT_TRUE(note.open({}).empty());
  const WaitNote::Scope again(note, "NCCL collective call 2 on GPU 0");
  ASSERT_EQ(note.open({}).size(), 1u);
  EXPECT_NE(note.open({})[0].id, first);
}

TEST(WaitNoteTest, AWatchOverItLogsALateWaitForWorkersNotKnownThenResumed) {
  std::vector<std::string> lines;
  g_lines = &lines;
  set_log_handler(LogLevel::kInfo, collect, nullptr);
  WaitNote note;
  StallWatch watch("worker 1", 2.0, [&] { return note.open({}); });
  const auto t0 = StallWatch::Clock::now();
  const auto at = [&](double s) {
    return t0 + std::chrono::duration_cast<StallWatch::Clock::duration>(std::chrono::duration<double>(s));
  };
  note.waiting("joining the NCCL communicator");
  EXPECT_EQ(watch.check(at(0)), 0u);
  EXPECT_EQ(watch.check(at(3)), 1u);
  note.done();
  EXPECT_EQ(watch.check(at(4)), 0u);
  set_log_handler(LogLevel::kInfo, nullptr, nullptr);
  g_lines = nullptr;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("for workers not known here: joining the NCCL communicator"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("resumed after waiting 4.0 s"), std::string::npos) << lines[1];
}

}  // namespace
}  // namespace dt::core
