// The allreduce store's stall inspector (kvstore/host/allreduce_stall_watch.h):
// a noted receive becomes a wait naming the peer by its rank in the job,
// the call and the bucket; a stall over it is logged once, then "resumed".
#include "kvstore/host/allreduce_stall_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/log.h"

namespace dt::kvstore {
namespace {

using collective::host::CallHeader;
using collective::host::CallKind;
using collective::host::LinkWatch;

CallHeader ring_call(uint64_t seq, uint64_t first_key) {
  CallHeader call;
  call.kind = CallKind::kAllReduceRing;
  call.seq = seq;
  call.count = 1000;
  call.tag = (first_key << 32) | 12345;
  return call;
}

TEST(AllreduceStallWatchTest, NamesThePeerByItsRankInTheJob) {
  EXPECT_TRUE(allreduce_open_waits(std::nullopt, {0, 1}).empty());
  // After a regroup the group is workers {0, 2, 3}: communicator rank 1 is worker 2.
  const LinkWatch::Waiting waiting{7, 1, "all_reduce (ring all-gather)", ring_call(5, 3)};
  auto waits = allreduce_open_waits(waiting, {0, 2, 3});
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].id, "receive 7");
  EXPECT_EQ(waits[0].waits_for, std::vector<int>{2});
  EXPECT_EQ(waits[0].what,
            "receive from worker 2 in ring all-reduce call 5 (bucket from key 3, 1000 elements) "
            "[all_reduce (ring all-gather)]");
  // A send the peer does not take.
  LinkWatch::Waiting sending = waiting;
  sending.direction = LinkWatch::Direction::kSend;
  waits = allreduce_open_waits(sending, {0, 2, 3});
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].waits_for, std::vector<int>{2});
  EXPECT_NE(waits[0].what.find("send to worker 2 in ring all-reduce call 5"), std::string::npos) << waits[0].what;
  // A rank the group no longer lists is named as the communicator's rank.
  waits = allreduce_open_waits(LinkWatch::Waiting{8, 4, "barrier", ring_call(6, 0)}, {0, 2, 3});
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_TRUE(waits[0].waits_for.empty());
  EXPECT_NE(waits[0].what.find("receive from rank 4 in "), std::string::npos) << waits[0].what;
  // The scheduler's news names the stalled worker 3, on which worker 2 only
  // waits: the wait is for 3, the text still says whom the receive is from.
  waits = allreduce_open_waits(waiting, {0, 2, 3}, {3});
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].waits_for, std::vector<int>{3});
  EXPECT_NE(waits[0].what.find("receive from worker 2 in "), std::string::npos) << waits[0].what;
  // The rendezvous names nobody here (the scheduler does), unless the news does.
  waits = allreduce_open_waits(LinkWatch::Waiting{9, -1, "rendezvous (meeting the other ranks)", CallHeader{}},
                               {0, 1});
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_TRUE(waits[0].waits_for.empty());
  EXPECT_EQ(waits[0].what, "rendezvous (meeting the other ranks) through the scheduler, before its first call");
  waits = allreduce_open_waits(LinkWatch::Waiting{9, -1, "rendezvous", CallHeader{}}, {0, 1}, {1});
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].waits_for, std::vector<int>{1});
}

std::vector<std::string>* g_lines = nullptr;

void collect(core::LogLevel, const char* facility, const char* message, void*) {
  if (g_lines != nullptr) g_lines->push_back(std::string(facility) + ": " + message);
}

TEST(AllreduceStallWatchTest, AStalledReceiveIsLoggedOnceThenResumed) {
  std::vector<std::string> lines;
  g_lines = &lines;
  core::set_log_handler(core::LogLevel::kInfo, collect, nullptr);
  LinkWatch link_waits;
  std::vector<std::vector<int>> named;
  core::StallWatch watch(
      "worker 0", 2.0, [&] { return allreduce_open_waits(link_waits.now(), {0, 1}); },
      [&](const std::vector<int>& w) { named.push_back(w); });
  const auto t0 = core::StallWatch::Clock::now();
  const auto at = [&](double s) {
    return t0 + std::chrono::duration_cast<core::StallWatch::Clock::duration>(std::chrono::duration<double>(s));
  };
  link_waits.call_started(ring_call(3, 8));
  link_waits.waiting(1, "all_reduce (ring reduce-scatter)");
  EXPECT_EQ(watch.check(at(0)), 0u);
  EXPECT_EQ(watch.check(at(2.5)), 1u);
  EXPECT_EQ(watch.check(at(4)), 1u);
  link_waits.done();
  EXPECT_EQ(watch.check(at(5)), 0u);
  core::set_log_handler(core::LogLevel::kInfo, nullptr, nullptr);
  g_lines = nullptr;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("worker 0: stall inspector: waiting since "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("for workers {1}: receive from worker 1 in ring all-reduce call 3 (bucket from key 8"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("stall inspector: resumed after waiting 5.0 s"), std::string::npos) << lines[1];
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0], std::vector<int>{1});
  EXPECT_TRUE(named[1].empty());
}

}  // namespace
}  // namespace dt::kvstore
