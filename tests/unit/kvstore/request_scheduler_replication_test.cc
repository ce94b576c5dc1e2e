// The request scheduler with replicated servers (DT_SERVER_REPLICATION=1):
// pushes to a server and its replica, pulls rerouted after a loss, new
// copies after a loss or a rejoin, and the verdicts parked requests wait for.
#include <gtest/gtest.h>

#include "request_scheduler_test_util.h"

namespace dt::kvstore {
namespace {

using namespace request_scheduler_test;

TEST_F(RequestSchedulerTest, ReplicationNeedsDistSyncAndTwoServers) {
  EXPECT_EQ(code_of([&] { start(2, false, 1, 0, true); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { start(1, true, 1, 0, true); }), ErrorCode::kInvalidArgument);
  start(2, true, 1, 0, true);
  EXPECT_TRUE(scheduler_->replicated());
}

TEST_F(RequestSchedulerTest, AReplicatedPushGoesToItsServerAndTheNextAndFinishesWhenBothAcknowledged) {
  start(3, true, 1, 0, true);
  TestKey key(5, 4, 2, 1.5f);  // on server 2: its replica is server 0
  for (const DataOp op : {DataOp::Init, DataOp::Push}) {
    auto done = scheduler_->submit({{op, key.part(true, false, op == DataOp::Push ? 1 : -1)}}, 0, nullptr);
    std::vector<Sent> sent = take_sorted(2);
    EXPECT_EQ(sent[0].server, 0);
    EXPECT_EQ(sent[1].server, 2);
    for (Sent& s : sent) {
      EXPECT_EQ(s.op, op);
      EXPECT_EQ(s.data(0), key.src);
    }
    sent[1].ack();
    EXPECT_FALSE(done->wait_for(std::chrono::milliseconds(50)));
    sent[0].ack();
    EXPECT_EQ(code_after_wait(done), std::nullopt);
  }
  EXPECT_EQ(servers_->untaken(), 0u);
}

TEST_F(RequestSchedulerTest, AReplicatedPushPullPushesToBothAndPullsFromItsServer) {
  start(2, true, 1, 0, true);
  TestKey key(5, 4, 1, 1.5f);
  TestKey behind(6, 4, 1, 2.5f);
  // Nothing queued: fused on its server, the replica's push apart.
  auto done = scheduler_->submit({{DataOp::PushPull, key.part(true, true, 1)}}, 0, nullptr);
  // Behind it, with server 1's pull window full: a push and a pull of its round.
  auto later = scheduler_->submit({{DataOp::PushPull, behind.part(true, true, 1)}}, 0, nullptr);
  std::vector<Sent> sent = take_sorted(3);
  EXPECT_EQ(sent[0].server, 0);
  EXPECT_EQ(sent[0].op, DataOp::Push);  // key's copy
  EXPECT_EQ(sent[0].data(0), key.src);
  EXPECT_EQ(sent[1].server, 1);
  EXPECT_EQ(sent[1].op, DataOp::Push);  // behind's push
  EXPECT_EQ(sent[1].data(0), behind.src);
  EXPECT_EQ(sent[2].server, 1);
  EXPECT_EQ(sent[2].op, DataOp::PushPull);
  EXPECT_EQ(sent[2].slices[0].round, 1);
  EXPECT_EQ(sent[2].data(0), key.src);
  for (Sent& s : sent) {
    if (s.op == DataOp::Push) s.ack();
  }
  sent[2].answer({4.0f});
  EXPECT_EQ(code_after_wait(done), std::nullopt);
  EXPECT_EQ(key.dst, std::vector<float>(4, 4.0f));
  std::vector<Sent> rest = take_sorted(2);  // behind's copy to server 0, its pull from server 1
  EXPECT_EQ(rest[0].server, 0);
  EXPECT_EQ(rest[0].op, DataOp::Push);
  EXPECT_EQ(rest[0].data(0), behind.src);
  EXPECT_EQ(rest[1].server, 1);
  EXPECT_EQ(rest[1].op, DataOp::Pull);
  rest[0].ack();
  rest[1].answer({5.0f});
  EXPECT_EQ(code_after_wait(later), std::nullopt);
  EXPECT_EQ(behind.dst, std::vector<float>(4, 5.0f));
  EXPECT_EQ(servers_->untaken(), 0u);
}

TEST_F(RequestSchedulerTest, ALostServersPullsGoToItsReplicaAndItsPushesCountAsDelivered) {
  start(2, true, 1, 0, true);
  TestKey key(5, 4, 0, 1.5f);
  auto done = scheduler_->submit({{DataOp::PushPull, key.part(true, true, 3)}}, 7, nullptr);
  std::vector<Sent> sent = take_sorted(2);  // pushpull to 0, push to 1
  ASSERT_EQ(sent[0].server, 0);
  ASSERT_EQ(sent[0].op, DataOp::PushPull);
  sent[1].ack();
  // Server 0 dies: its connection drops before the scheduler's verdict.
  // The request waits for the verdict instead of failing.
  sent[0].done(Error(ErrorCode::kNetwork, "connection closed"), nullptr);
  EXPECT_FALSE(done->wait_for(std::chrono::milliseconds(50)));
  EXPECT_TRUE(scheduler_->server_alive(0));
  scheduler_->server_lost(0);
  EXPECT_FALSE(scheduler_->server_alive(0));
  // The communication thread has the link drop it.
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (servers_->dropped().empty() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(servers_->dropped(), std::vector<int>{0});
  // The pull, same round, now from the replica.
  Sent again = servers_->take();
  EXPECT_EQ(again.server, 1);
  EXPECT_EQ(again.op, DataOp::Pull);
  EXPECT_EQ(again.slices[0].round, 3);
  again.answer({6.0f});
  EXPECT_EQ(code_after_wait(done), std::nullopt);
  EXPECT_EQ(key.dst, std::vector<float>(4, 6.0f));
  // Later requests leave the lost server out: the part's one holder left
  // gets the pushpull of the round, fused, and no new copy is made (with 2
  // servers none is left to hold it).
  auto next = scheduler_->submit({{DataOp::PushPull, key.part(true, true, 4)}}, 0, nullptr);
  Sent later = servers_->take();
  EXPECT_EQ(later.server, 1);
  EXPECT_EQ(later.op, DataOp::PushPull);
  EXPECT_EQ(later.slices[0].round, 4);
  EXPECT_EQ(later.slices[0].adopt_from, -1);
  later.answer({8.0f});
  EXPECT_EQ(code_after_wait(next), std::nullopt);
  EXPECT_EQ(servers_->untaken(), 0u);
}

TEST_F(RequestSchedulerTest, AfterALossThePartsItHeldGetANewCopyOnTheNextServerLeft) {
  start(3, true, 1, 0, true);
  TestKey before(5, 4, 0, 1.5f);   // on server 0, its replica on the lost server 1
  TestKey lost_home(6, 4, 1, 2.5f);  // on the lost server 1, its replica on 2
  TestKey untouched(7, 4, 2, 3.5f);  // on server 2, its replica on 0
  scheduler_->server_lost(1);
  // Key 5: pulled from server 0; its pushes go to 0 and to the new copy on
  // 2, filled from 0.
  auto a = scheduler_->submit({{DataOp::Push, before.part(true, false, 3)}}, 0, nullptr);
  std::vector<Sent> sent = take_sorted(2);
  EXPECT_EQ(sent[0].server, 0);
  EXPECT_EQ(sent[0].slices[0].adopt_from, -1);
  EXPECT_EQ(sent[1].server, 2);
  EXPECT_EQ(sent[1].op, DataOp::Push);
  EXPECT_EQ(sent[1].slices[0].adopt_from, 0);
  EXPECT_EQ(sent[1].slices[0].round, 3);
  EXPECT_FALSE(a->wait_for(std::chrono::milliseconds(20))) << "both copies are acknowledged first";
  for (Sent& s : sent) s.ack();
  EXPECT_EQ(code_after_wait(a), std::nullopt);
  // Key 6: its replica 2 serves it now, and 0 takes the new copy, filled
  // from 2.
  auto b = scheduler_->submit({{DataOp::Push, lost_home.part(true, false, 3)}}, 0, nullptr);
  sent = take_sorted(2);
  EXPECT_EQ(sent[0].server, 0);
  EXPECT_EQ(sent[0].slices[0].adopt_from, 2);
  EXPECT_EQ(sent[1].server, 2);
  EXPECT_EQ(sent[1].slices[0].adopt_from, -1);
  for (Sent& s : sent) s.ack();
  EXPECT_EQ(code_after_wait(b), std::nullopt);
  auto pull = scheduler_->submit({{DataOp::Pull, lost_home.part(false, true, 3)}}, 0, nullptr);
  Sent pulled = servers_->take();
  EXPECT_EQ(pulled.server, 2);
  pulled.answer({4.0f});
  EXPECT_EQ(code_after_wait(pull), std::nullopt);
  // Key 7 keeps its two holders, 2 and 0, as they were.
  auto c = scheduler_->submit({{DataOp::Push, untouched.part(true, false, 3)}}, 0, nullptr);
  sent = take_sorted(2);
  EXPECT_EQ(sent[0].server, 0);
  EXPECT_EQ(sent[0].slices[0].adopt_from, -1);
  EXPECT_EQ(sent[1].server, 2);
  for (Sent& s : sent) s.ack();
  EXPECT_EQ(code_after_wait(c), std::nullopt);
  // A joined worker's init of key 6 goes to its original holder left (2)
  // only: the new copy on 0 takes the job's value from 2.
  auto init = scheduler_->submit({{DataOp::Init, lost_home.part(true, false)}}, 0, nullptr);
  Sent inited = servers_->take();
  EXPECT_EQ(inited.server, 2);
  EXPECT_EQ(inited.op, DataOp::Init);
  inited.ack();
  EXPECT_EQ(code_after_wait(init), std::nullopt);
  EXPECT_EQ(servers_->untaken(), 0u);
}

// Server rejoin: of 2 servers, 1 is lost and a new process takes its place.
// The link reconnects (after dropping the old connection), every part gets
// a new copy there, filled from server 0, which keeps serving the pulls;
// the copies count once the rejoined server acknowledged a push of each.
// Then server 0 may go: the rejoined server serves everything.
TEST_F(RequestSchedulerTest, ARejoinedServerTakesNewCopiesOfThePartsLeftWithOneHolder) {
  start(2, true, 1, 0, true);
  std::mutex mutex;
  std::vector<uint32_t> reports;
  scheduler_->on_copies_restored([&](uint32_t changes) {
    std::lock_guard<std::mutex> lock(mutex);
    reports.push_back(changes);
  });
  const auto reported = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return reports;
  };
  TestKey on_0(5, 4, 0, 1.5f);
  TestKey on_1(6, 4, 1, 2.5f);
  auto init = scheduler_->submit({{DataOp::Init, on_0.part(true, false)}, {DataOp::Init, on_1.part(true, false)}}, 0,
                                 nullptr);
  for (Sent& s : take_sorted(2)) s.ack();  // one message per server
  EXPECT_EQ(code_after_wait(init), std::nullopt);
  scheduler_->server_lost(1);
  // One server left: no new copy is possible, and none is awaited.
  EXPECT_EQ(reported(), std::vector<uint32_t>{1});
  ps::NodeInfo again;
  again.role = ps::Role::kServer;
  again.rank = 1;
  again.pid = 42;
  scheduler_->server_rejoined(again);
  EXPECT_EQ(servers_->link_events(), (std::vector<std::string>{"drop 1", "reconnect 1 pid 42"}));
  EXPECT_TRUE(scheduler_->server_alive(1));
  EXPECT_EQ(scheduler_->holders(1), (std::vector<int>{0, 1}));
  // Both keys: pushed to 0 and to the new copy on 1, filled from 0.
  auto a = scheduler_->submit({{DataOp::Push, on_0.part(true, false, 3)}, {DataOp::Push, on_1.part(true, false, 3)}},
                              0, nullptr);
  std::vector<Sent> sent = take_sorted(2);
  ASSERT_EQ(sent[0].server, 0);
  ASSERT_EQ(sent[1].server, 1);
  for (const ps::DecodedSlice& slice : sent[0].slices) EXPECT_EQ(slice.adopt_from, -1);
  ASSERT_EQ(sent[1].slices.size(), 2u);
  for (const ps::DecodedSlice& slice : sent[1].slices) EXPECT_EQ(slice.adopt_from, 0);
  sent[0].ack();
  // Kept at the copy, not filled yet: the request is done, the copies do
  // not count.
  sent[1].ack_held();
  EXPECT_EQ(code_after_wait(a), std::nullopt);
  EXPECT_EQ(reported(), std::vector<uint32_t>{1}) << "the copies count once filled";
  auto b = scheduler_->submit({{DataOp::Push, on_0.part(true, false, 4)}, {DataOp::Push, on_1.part(true, false, 4)}},
                              0, nullptr);
  sent = take_sorted(2);
  sent[0].ack();
  sent[1].ack();
  EXPECT_EQ(code_after_wait(b), std::nullopt);
  EXPECT_EQ(reported(), (std::vector<uint32_t>{1, 2}));
  // Pulls stay with server 0, which held the parts throughout.
  auto pull = scheduler_->submit({{DataOp::Pull, on_1.part(false, true, 3)}}, 0, nullptr);
  Sent pulled = servers_->take();
  EXPECT_EQ(pulled.server, 0);
  pulled.answer({4.0f});
  EXPECT_EQ(code_after_wait(pull), std::nullopt);
  // Server 0 lost: the rejoined server holds every part alone.
  scheduler_->server_lost(0);
  auto last = scheduler_->submit({{DataOp::Pull, on_0.part(false, true, 3)}}, 0, nullptr);
  pulled = servers_->take();
  EXPECT_EQ(pulled.server, 1);
  pulled.answer({4.0f});
  EXPECT_EQ(code_after_wait(last), std::nullopt);
  EXPECT_EQ(servers_->untaken(), 0u);
}

// A message to a server cut by its loss may come back failed only after
// the server has rejoined: it is the loss's, not the rejoined server's. The
// push is carried by its other copy and the pull goes to the holder left.
TEST_F(RequestSchedulerTest, AFailureFromBeforeALossThatComesBackAfterTheRejoinCountsAsTheLoss) {
  start(2, true, 1, 0, true, std::chrono::milliseconds(200));
  TestKey key(5, 4, 1, 1.5f);  // on server 1, its replica on 0
  auto done = scheduler_->submit({{DataOp::Push, key.part(true, false, 3)}, {DataOp::Pull, key.part(false, true, 3)}},
                                 0, nullptr);
  std::vector<Sent> sent = take_sorted(3);  // push to 0; push and pull to 1
  ASSERT_EQ(sent[0].server, 0);
  ASSERT_EQ(sent[1].server, 1);
  ASSERT_EQ(sent[2].server, 1);
  scheduler_->server_lost(1);
  ps::NodeInfo again;
  again.role = ps::Role::kServer;
  again.rank = 1;
  again.pid = 43;
  scheduler_->server_rejoined(again);
  sent[1].done(Error(ErrorCode::kNetwork, "connection lost while waiting for the reply"), nullptr);
  sent[2].done(Error(ErrorCode::kNetwork, "connection lost while waiting for the reply"), nullptr);
  sent[0].ack();
  Sent pulled = servers_->take();
  EXPECT_EQ(pulled.server, 0);
  EXPECT_EQ(pulled.op, DataOp::Pull);
  pulled.answer({4.0f});
  EXPECT_EQ(code_after_wait(done), std::nullopt);
}

TEST_F(RequestSchedulerTest, APushWhoseOtherCopyWentToALostServerToo) {
  start(3, true, 1, 0, true);
  TestKey key(5, 4, 0, 1.5f);
  scheduler_->server_lost(1);
  // Pushed to 0 and to the new copy on 2; then both are lost.
  auto done = scheduler_->submit({{DataOp::Push, key.part(true, false, 3)}}, 0, nullptr);
  std::vector<Sent> sent = take_sorted(2);
  scheduler_->server_lost(2);
  sent[1].done(Error(ErrorCode::kClosed, "dropped"), nullptr);
  scheduler_->server_lost(0);
  sent[0].done(Error(ErrorCode::kClosed, "dropped"), nullptr);
  EXPECT_EQ(code_after_wait(done), ErrorCode::kPeerLost);
}

TEST_F(RequestSchedulerTest, WithoutReplicationADroppedConnectionFailsTheRequest) {
  start(2, true, 1);
  TestKey key(5, 4, 0, 1.5f);
  auto done = push(key, 0, 1);
  servers_->take().done(Error(ErrorCode::kNetwork, "connection closed"), nullptr);
  EXPECT_EQ(code_after_wait(done), ErrorCode::kNetwork);
  scheduler_->server_lost(0);  // ignored
  EXPECT_TRUE(scheduler_->server_alive(0));
  EXPECT_TRUE(servers_->dropped().empty());
}

TEST_F(RequestSchedulerTest, AJobFailureEndsRequestsParkedForAVerdict) {
  start(2, true, 1, 0, true);
  auto done = park_a_push();
  servers_->fail(Error(ErrorCode::kPeerLost, "server 0 lost"));
  EXPECT_EQ(code_after_wait(done), ErrorCode::kPeerLost);
}

TEST_F(RequestSchedulerTest, WithoutAVerdictAParkedRequestFailsWithItsOwnError) {
  start(2, true, 1, 0, true, std::chrono::milliseconds(100));
  auto done = park_a_push();
  EXPECT_EQ(code_after_wait(done), ErrorCode::kNetwork);
}

TEST_F(RequestSchedulerTest, AReplicaGetsThePushedBytesEvenWhenThePullOverwroteThemFirst) {
  // The trainer pushpulls in place: the pull's reply lands where the push
  // came from. The copy for the replica, held behind a full window, must
  // still carry what was pushed.
  start(2, true, 1, 0, true);
  TestKey blocker(1, 4, 0, 1.0f);
  auto first = push(blocker, 0, 1);  // fills both servers' push windows
  TestKey key(2, 4, 1, 1.5f);
  RequestScheduler::Part in_place = key.part(true, true, 1);
  in_place.dst = reinterpret_cast<uint8_t*>(key.src.data());
  auto done = scheduler_->submit({{DataOp::PushPull, in_place}}, 0, nullptr);
  std::vector<Sent> sent = take_sorted(3);  // blocker's push to 0 and to 1, key's pushpull to 1
  ASSERT_EQ(sent[2].op, DataOp::PushPull);
  sent[2].answer({9.0f});
  EXPECT_EQ(key.src, std::vector<float>(4, 9.0f));
  sent[0].ack();  // server 0's window frees: key's copy leaves
  Sent copy = servers_->take();
  EXPECT_EQ(copy.server, 0);
  EXPECT_EQ(copy.op, DataOp::Push);
  EXPECT_EQ(copy.data(0), std::vector<float>(4, 1.5f));
  copy.ack();
  sent[1].ack();
  EXPECT_EQ(code_after_wait(first), std::nullopt);
  EXPECT_EQ(code_after_wait(done), std::nullopt);
}

TEST_F(RequestSchedulerTest, AReplicatedCompressedPushIsEncodedOnceForBothServers) {
  // Error feedback moves once per push: both copies of each push carry the
  // bytes an unreplicated store sends.
  const auto config = ps::compression::CompressionConfig::parse("2bit:threshold=0.5");
  auto encodings = [&](bool replicated) {
    start(2, true, 1, 0, replicated);
    scheduler_->set_compression(config);
    TestKey key(5, 8, 0, 0.3f);  // below the threshold: sent only once the residual adds up
    std::vector<std::vector<uint8_t>> bytes;
    for (int64_t round = 1; round <= 3; ++round) {
      auto done = push(key, 0, round);
      std::vector<Sent> sent = take_sorted(replicated ? 2 : 1);
      for (Sent& s : sent) {
        EXPECT_NE(s.slices[0].encoding, 0);
        bytes.emplace_back(s.slices[0].data, s.slices[0].data + s.slices[0].data_bytes);
        s.ack();
      }
      EXPECT_EQ(code_after_wait(done), std::nullopt);
    }
    return bytes;
  };
  const auto single = encodings(false);
  const auto both = encodings(true);
  ASSERT_EQ(single.size(), 3u);
  ASSERT_EQ(both.size(), 6u);
  for (size_t round = 0; round < 3; ++round) {
    EXPECT_EQ(both[2 * round], single[round]) << round;
    EXPECT_EQ(both[2 * round + 1], single[round]) << round;
  }
  EXPECT_NE(single[0], single[1]);  // the residual did move the second push
}

}  // namespace
}  // namespace dt::kvstore
