// The stall inspector's note of what a host communicator blocks on
// (collective/host/link_watch.h): its own bookkeeping, and two real ranks
// (threads of this process over ipc://) where rank 0's note names rank 1
// while rank 1 stays away, first in the rendezvous, then receiving in a
// ring all-reduce, then sending a broadcast, and is clear once rank 1 came.
#include "collective/host/link_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collective/host/host_communicator.h"
#include "core/error.h"

namespace dt::collective::host {
namespace {

using namespace std::chrono_literals;

TEST(LinkWatchTest, NotesTheCallAndEachWaitUnderItsOwnId) {
  LinkWatch watch;
  EXPECT_FALSE(watch.now().has_value());
  CallHeader call;
  call.kind = CallKind::kAllReduceRing;
  call.seq = 4;
  call.count = 100;
  call.tag = (uint64_t{3} << 32) | 77;
  watch.call_started(call);
  std::optional<LinkWatch::Waiting> first;
  {
    const LinkWatch::Scope noted(&watch, 1, "all_reduce (ring reduce-scatter)");
    first = watch.now();
  }
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->peer, 1);
  EXPECT_EQ(first->what, "all_reduce (ring reduce-scatter)");
  EXPECT_EQ(first->call.seq, 4u);
  EXPECT_EQ(call_text(first->call), "ring all-reduce call 4 (bucket from key 3, 100 elements)");
  EXPECT_FALSE(watch.now().has_value());
  // The next wait, even on the same peer, is another one.
  watch.waiting(1, "all_reduce (ring all-gather)");
  ASSERT_TRUE(watch.now().has_value());
  EXPECT_NE(watch.now()->id, first->id);
  watch.done();
  EXPECT_FALSE(watch.now().has_value());
  // No watch: nothing to note, nothing to fail.
  const LinkWatch::Scope none(nullptr, 1, "barrier");
}

TEST(LinkWatchTest, CallTextSaysWhichCall) {
  CallHeader call;
  EXPECT_EQ(call_text(call), "before its first call");
  call.seq = 2;
  call.kind = CallKind::kBroadcast;
  call.root = 1;
  call.count = 64;
  EXPECT_EQ(call_text(call), "broadcast from rank 1 call 2 (64 bytes)");
  call.kind = CallKind::kAllReduceDoubling;
  call.tag = 0;
  EXPECT_EQ(call_text(call), "recursive-doubling all-reduce call 2 (64 elements)");
  call.kind = CallKind::kAllReduceHierarchical;
  EXPECT_EQ(call_text(call), "hierarchical all-reduce call 2 (64 elements)");
  call.kind = CallKind::kBarrier;
  EXPECT_EQ(call_text(call), "barrier call 2");
}

// Polls watch (up to 10 s) until it notes a wait on peer; returns it.
std::optional<LinkWatch::Waiting> wait_noted(const LinkWatch& watch, int peer) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto now = watch.now();
    if (now && now->peer == peer) return now;
    std::this_thread::sleep_for(5ms);
  }
  return std::nullopt;
}

TEST(LinkWatchTest, ARankWaitingForAnAbsentPeerNotesItThenClears) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/dt-rw-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  HostCommunicatorOptions plain;
  plain.timeout_s = 20;
  plain.ipc_dir = dir;
  HostCommunicatorOptions watched = plain;
  watched.link_watch = std::make_shared<LinkWatch>();
  const LinkWatch& watch = *watched.link_watch;

  // The rendezvous: rank 0 publishes, rank 1 comes later.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<uint8_t>> blobs(2);
  int arrived = 0;
  const auto exchange_of = [&](int rank) -> Exchange {
    return [&, rank](const std::vector<uint8_t>& mine) {
      std::unique_lock<std::mutex> lock(mu);
      blobs[static_cast<size_t>(rank)] = mine;
      ++arrived;
      cv.notify_all();
      if (!cv.wait_for(lock, 10s, [&] { return arrived == 2; })) {
        throw core::Error(core::ErrorCode::kTimedOut, "test exchange: rank 1 never came");
      }
      return blobs;
    };
  };
  auto rank0 = std::async(std::launch::async, [&] { return HostCommunicator::create(0, 2, exchange_of(0), watched); });
  const auto rendezvous = wait_noted(watch, -1);
  ASSERT_TRUE(rendezvous.has_value());
  EXPECT_NE(rendezvous->what.find("rendezvous"), std::string::npos) << rendezvous->what;
  EXPECT_EQ(rendezvous->call.seq, 0u);
  auto rank1 = HostCommunicator::create(1, 2, exchange_of(1), plain);
  auto comm0 = rank0.get();
  EXPECT_FALSE(watch.now().has_value());

  // A ring all-reduce (above small_bytes) rank 1 joins late.
  const size_t count = 64 * 1024;
  std::vector<float> a(count, 1.0f), b(count, 2.0f);
  const uint64_t tag = (uint64_t{9} << 32) | 5;
  auto summed0 = std::async(std::launch::async, [&] { comm0->all_reduce_sum(a.data(), count, core::DType::kFloat32, tag); });
  const auto ring = wait_noted(watch, 1);
  ASSERT_TRUE(ring.has_value());
  EXPECT_EQ(ring->call.kind, CallKind::kAllReduceRing);
  EXPECT_EQ(ring->call.seq, 1u);
  EXPECT_EQ(ring->call.tag, tag);
  EXPECT_NE(ring->what.find("ring reduce-scatter"), std::string::npos) << ring->what;
  // Still the same wait a moment later: nothing moved.
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(watch.now().has_value());
  EXPECT_EQ(watch.now()->id, ring->id);
  EXPECT_EQ(ring->direction, LinkWatch::Direction::kReceive);
  rank1->all_reduce_sum(b.data(), count, core::DType::kFloat32, tag);
  summed0.get();
  EXPECT_FALSE(watch.now().has_value());
  EXPECT_EQ(a[0], 3.0f);
  EXPECT_EQ(a[count - 1], 3.0f);

  // A broadcast from rank 0 that rank 1 does not take yet: far more than the
  // socket's buffers hold, so rank 0's send waits on rank 1.
  std::vector<uint8_t> big(64 << 20, 7), into(big.size(), 0);
  auto sent0 = std::async(std::launch::async, [&] { comm0->broadcast(big.data(), big.size(), 0); });
  const auto send = wait_noted(watch, 1);
  ASSERT_TRUE(send.has_value());
  EXPECT_EQ(send->direction, LinkWatch::Direction::kSend);
  EXPECT_EQ(send->call.kind, CallKind::kBroadcast);
  EXPECT_EQ(send->call.seq, 2u);
  rank1->broadcast(into.data(), into.size(), 0);
  sent0.get();
  EXPECT_FALSE(watch.now().has_value());
  EXPECT_EQ(into.back(), 7);
  comm0.reset();
  rank1.reset();
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace dt::collective::host
