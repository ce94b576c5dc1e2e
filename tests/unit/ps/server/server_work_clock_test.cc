// dtrun's live job summary on a server: WorkClock's split of the wall time
// (at given moments, and from threads), the key store's rounds counted as
// computing, and ServerStatusFile's writes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/status_file.h"
#include "core/status_line.h"
#include "ps/server/key_store.h"
#include "ps/server/server_status_file.h"
#include "ps/server/work_clock.h"

namespace dt::ps {
namespace {

using Activity = WorkClock::Activity;
using Clock = WorkClock::Clock;

Clock::time_point at(const Clock::time_point t0, double s) {
  return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// A Section's start or end, at a moment in seconds.
struct Step {
  bool enter;
  Activity activity;
  double at_s;
};
constexpr bool kEnter = true;
constexpr bool kLeave = false;

// The split, at until_s, of a clock that went through steps.
WorkClock::Split play(const std::vector<Step>& steps, double until_s) {
  WorkClock clock;
  const Clock::time_point t0 = Clock::now();
  for (const Step& s : steps) {
    if (s.enter) {
      clock.enter(s.activity, at(t0, s.at_s));
    } else {
      clock.leave(s.activity, at(t0, s.at_s));
    }
  }
  return clock.split(at(t0, until_s));
}

TEST(PsServerWorkClock, NothingBeforeTheFirstSection) {
  const WorkClock clock;
  const WorkClock::Split split = clock.split();
  EXPECT_EQ(split.requests, 0);
  EXPECT_EQ(split.wall_s, 0);
}

TEST(PsServerWorkClock, SplitsOneRequestIntoItsParts) {
  const WorkClock::Split split = play({{kEnter, Activity::kHandling, 0},
                                       {kEnter, Activity::kComputing, 1},
                                       {kLeave, Activity::kComputing, 3},
                                       {kLeave, Activity::kHandling, 4}},
                                      10);
  EXPECT_EQ(split.requests, 1);
  EXPECT_NEAR(split.compute_s, 2, 1e-6);
  EXPECT_NEAR(split.communicate_s, 2, 1e-6);
  EXPECT_NEAR(split.waiting_s, 6, 1e-6);
  EXPECT_NEAR(split.wall_s, 10, 1e-6);
}

TEST(PsServerWorkClock, CountsAMomentOnceWhateverTheThreads) {
  // Request A [0, 4], request B [2, 6] computing in [3, 5]: computing 2 s,
  // communicating [0, 3] and [5, 6], waiting [6, 8].
  const WorkClock::Split split = play({{kEnter, Activity::kHandling, 0},
                                       {kEnter, Activity::kHandling, 2},
                                       {kEnter, Activity::kComputing, 3},
                                       {kLeave, Activity::kHandling, 4},
                                       {kLeave, Activity::kComputing, 5},
                                       {kLeave, Activity::kHandling, 6}},
                                      8);
  EXPECT_EQ(split.requests, 2);
  EXPECT_NEAR(split.compute_s, 2, 1e-6);
  EXPECT_NEAR(split.communicate_s, 4, 1e-6);
  EXPECT_NEAR(split.waiting_s, 2, 1e-6);
  EXPECT_NEAR(split.wall_s, 8, 1e-6);
}

TEST(PsServerWorkClock, AnEarlierMomentCountsAsTheLastOne) {
  // Read before, counted after: no negative time, and the split asked for
  // at an earlier moment still counts nothing backwards.
  const WorkClock::Split split = play({{kEnter, Activity::kHandling, 5}, {kLeave, Activity::kHandling, 4}}, 3);
  EXPECT_EQ(split.wall_s, 0);
  EXPECT_EQ(split.communicate_s, 0);
}

TEST(PsServerWorkClock, ThreadsSectionsAddUpToTheWallTime) {
  WorkClock clock;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < 200; ++i) {
        const WorkClock::Section handling(&clock, Activity::kHandling);
        if (i % 2 == 0) {
          const WorkClock::Section computing(&clock, Activity::kComputing);
          std::this_thread::yield();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const WorkClock::Split split = clock.split();
  EXPECT_EQ(split.requests, 800);
  EXPECT_GE(split.compute_s, 0);
  EXPECT_GE(split.communicate_s, 0);
  EXPECT_GE(split.waiting_s, 0);
  EXPECT_NEAR(split.compute_s + split.communicate_s + split.waiting_s, split.wall_s, 1e-9);
  // A null clock: the hooks' "off".
  const WorkClock::Section off(nullptr, Activity::kHandling);
}

TEST(PsServerWorkClock, AKeyStoresRoundsCountAsComputing) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  WorkClock clock;
  store.set_work_clock(&clock);
  const int64_t n = 1 << 20;
  const PartInfo part{PartKey{7, 0, n}, core::DType::kFloat32, core::Shape({n})};
  const std::vector<float> value(static_cast<size_t>(n), 1.0f);
  for (int w = 1; w >= 0; --w) store.init(w, part, value.data(), value.size() * sizeof(float));
  const auto done = [](const core::Error* e) { ASSERT_EQ(e, nullptr) << e->what(); };
  store.push(1, part, 1, value.data(), value.size() * sizeof(float), done);
  store.push(0, part, 1, value.data(), value.size() * sizeof(float), done);
  const WorkClock::Split split = clock.split();
  EXPECT_GT(split.compute_s, 0) << "the round's sum of 4 MB took no time";
  EXPECT_EQ(split.communicate_s, 0) << "no request was handled";
  EXPECT_EQ(split.requests, 0);
}

TEST(PsServerStatusFile, RewritesTheFileAndWritesOnceMoreAtTheEnd) {
  const std::string path = ::testing::TempDir() + "/server_status_file_test.status";
  std::remove(path.c_str());
  WorkClock clock;
  int64_t traffic_calls = 0;
  {
    ServerStatusFile status(std::make_unique<core::StatusFile>(path, 0.02, "server"), clock, [&traffic_calls] {
      ++traffic_calls;
      return core::Traffic{300, 400};
    });
    const WorkClock::Section handling(&clock, Activity::kHandling);
    // The thread's write: within 10 s (a deadline, not a speed).
    core::ServerStatus read;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (;;) {
      std::ifstream in(path);
      std::string line;
      if (in && std::getline(in, line) && core::parse_status(line, read) && read.requests == 1) break;
      ASSERT_LT(Clock::now(), deadline) << "no status file at " << path;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(read.traffic.bytes_sent, 300u);
    EXPECT_EQ(read.traffic.bytes_received, 400u);
  }
  for (int i = 0; i < 3; ++i) {
    const WorkClock::Section more(&clock, Activity::kHandling);
  }
  // The last write was the destructor's: the request in hand then, not the
  // three after it.
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  core::ServerStatus last;
  ASSERT_TRUE(core::parse_status(line, last)) << line;
  EXPECT_EQ(last.requests, 1);
  EXPECT_GT(last.wall_s, 0);
  EXPECT_NEAR(last.compute_s + last.communicate_s + last.waiting_s, last.wall_s, 0.002);
  EXPECT_GE(traffic_calls, 2);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dt::ps
