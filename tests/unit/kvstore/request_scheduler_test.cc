// The request scheduler against fake servers that answer when the test says
// so: which messages leave, in what order, fused how, and what replies,
// failures and close() do to the requests. Replicated servers:
// request_scheduler_replication_test.cc.
#include <gtest/gtest.h>

#include "request_scheduler_test_util.h"

namespace dt::kvstore {
namespace {

using namespace request_scheduler_test;

TEST_F(RequestSchedulerTest, WindowIsOneToTheLaneWindowAndZeroPicksTheLaneWindow) {
  start(1, false, 0);
  EXPECT_EQ(scheduler_->window(), ps::kLaneWindow);
  start(1, false, 1);
  EXPECT_EQ(scheduler_->window(), 1);
  for (int bad : {-1, ps::kLaneWindow + 1}) {
    EXPECT_EQ(code_of([&] { start(1, false, bad); }), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST_F(RequestSchedulerTest, APushCarriesItsBytesRoundAndRankAndFinishesOnTheReply) {
  start(2, true, 1, 3);
  TestKey key(7, 4, 1, 2.5f);
  auto done = push(key, 0, 5);
  Sent sent = servers_->take();
  EXPECT_EQ(sent.server, 1);
  EXPECT_EQ(sent.op, DataOp::Push);
  EXPECT_EQ(sent.worker_rank, 3);
  ASSERT_EQ(sent.slices.size(), 1u);
  EXPECT_EQ(sent.slices[0].info.part.key, 7u);
  EXPECT_EQ(sent.slices[0].info.part.end, 4);
  EXPECT_EQ(sent.slices[0].round, 5);
  EXPECT_EQ(sent.data(0), key.src);
  EXPECT_FALSE(done->done());
  sent.ack();
  EXPECT_EQ(code_after_wait(done), std::nullopt);
}

TEST_F(RequestSchedulerTest, InitAnnouncesTheStoresMode) {
  for (const bool sync : {true, false}) {
    start(1, sync, 1);
    TestKey key(1, 2, 0, 1.0f);
    auto done = scheduler_->submit({{DataOp::Init, key.part(true, false)}}, 0, nullptr);
    Sent sent = servers_->take();
    EXPECT_EQ(sent.op, DataOp::Init);
    EXPECT_EQ(sent.text, sync ? "dist_sync" : "dist_async");
    sent.ack();
    EXPECT_EQ(code_after_wait(done), std::nullopt);
  }
}

// Window 1: while the first push is in flight the others queue; they leave
// fused, the most urgent first. Pulls have their own lane and window.
TEST_F(RequestSchedulerTest, QueuedPartsLeaveFusedInPriorityOrder) {
  start(1, false, 1);
  TestKey a(1, 4, 0, 1.0f), b(2, 4, 0, 2.0f), c(3, 4, 0, 3.0f), d(4, 4, 0, 0.0f);
  auto first = push(a, 0);
  auto later = push(b, 0);
  auto urgent = push(c, 5);
  auto pull = scheduler_->submit({{DataOp::Pull, d.part(false, true)}}, 9, nullptr);
  Sent sent_a = servers_->take();
  EXPECT_EQ(keys_of(sent_a), std::vector<Key>{1});
  Sent sent_d = servers_->take();
  EXPECT_EQ(sent_d.op, DataOp::Pull);
  EXPECT_EQ(servers_->untaken(), 0u);
  sent_a.ack();
  Sent fused = servers_->take();
  EXPECT_EQ(fused.op, DataOp::Push);
  EXPECT_EQ(keys_of(fused), (std::vector<Key>{3, 2}));
  EXPECT_EQ(fused.data(0), c.src);
  EXPECT_EQ(fused.data(1), b.src);
  fused.ack();
  sent_d.answer({4.0f});
  for (const auto& request : {first, later, urgent, pull}) EXPECT_EQ(code_after_wait(request), std::nullopt);
  EXPECT_EQ(d.dst, std::vector<float>(4, 4.0f));
}

TEST_F(RequestSchedulerTest, ServersHaveAWindowOfMessagesInFlightEach) {
  start(2, false, 2);
  std::vector<TestKey> keys;
  for (Key k = 0; k < 6; ++k) keys.emplace_back(k, 4, static_cast<int>(k % 2), 1.0f);
  std::vector<std::shared_ptr<Completion>> requests;
  for (TestKey& key : keys) requests.push_back(push(key, 0));
  // Small requests leave from the submitting thread as far as the windows
  // allow: two per server.
  std::vector<Sent> sent;
  for (int i = 0; i < 4; ++i) sent.push_back(servers_->take());
  EXPECT_EQ(servers_->untaken(), 0u);
  for (const Sent& s : sent) EXPECT_EQ(s.thread, std::this_thread::get_id());
  EXPECT_EQ(keys_of(sent[0]), std::vector<Key>{0});
  EXPECT_EQ(keys_of(sent[1]), std::vector<Key>{1});
  // A reply frees its server's slot for that server's queue only.
  sent[0].ack();
  Sent next = servers_->take();
  EXPECT_EQ(next.server, 0);
  EXPECT_EQ(keys_of(next), std::vector<Key>{4});
  EXPECT_EQ(servers_->untaken(), 0u);
  sent[1].ack();
  Sent last = servers_->take();
  EXPECT_EQ(last.server, 1);
  EXPECT_EQ(keys_of(last), std::vector<Key>{5});
  for (Sent* s : {&sent[2], &sent[3], &next, &last}) s->ack();
  for (const auto& request : requests) EXPECT_EQ(code_after_wait(request), std::nullopt);
}

// A request above 1 MiB leaves from the communication thread, in messages
// of at most ~4 MiB of tensor bytes.
TEST_F(RequestSchedulerTest, BigRequestsLeaveFromTheCommunicationThreadInBoundedMessages) {
  start(1, false, 0);
  const int64_t part = static_cast<int64_t>(ps::KeyPlacement::kDefaultPartBytes / sizeof(float));
  TestKey big(1, 2 * part, 0, 1.5f);
  auto done = scheduler_->submit({{DataOp::Push, big.part_range(0, part, true, false)},
                                  {DataOp::Push, big.part_range(part, 2 * part, true, false)}},
                                 0, nullptr);
  for (int i = 0; i < 2; ++i) {
    Sent sent = servers_->take();
    EXPECT_NE(sent.thread, std::this_thread::get_id());
    ASSERT_EQ(sent.slices.size(), 1u);
    EXPECT_EQ(sent.slices[0].data_bytes, ps::KeyPlacement::kDefaultPartBytes);
    EXPECT_EQ(sent.slices[0].info.part.begin, i * part);
    sent.ack();
  }
  EXPECT_EQ(code_after_wait(done), std::nullopt);
}

TEST_F(RequestSchedulerTest, ASyncPushPullWithNothingQueuedLeavesAsOneMessage) {
  start(1, true, 1);
  TestKey key(1, 4, 0, 2.0f);
  bool spread = false;
  auto done = scheduler_->submit({{DataOp::PushPull, key.part(true, true, 1)}}, 0, [&] { spread = true; });
  Sent sent = servers_->take();
  EXPECT_EQ(sent.op, DataOp::PushPull);
  EXPECT_EQ(sent.data(0), key.src);
  sent.answer({3.0f});
  EXPECT_EQ(code_after_wait(done), std::nullopt);
  EXPECT_TRUE(spread);
  EXPECT_EQ(key.dst, std::vector<float>(4, 3.0f));
}

// Queued behind other work, a dist_sync pushpull's pull would hold a server
// slot while its push waits: it leaves as a push and a pull of its round.
TEST_F(RequestSchedulerTest, ASyncPushPullBehindQueuedWorkSplitsIntoAPushAndAPull) {
  start(1, true, 1);
  TestKey a(1, 4, 0, 1.0f), b(2, 4, 0, 2.0f), c(3, 4, 0, 3.0f);
  auto first = push(a, 0, 1);
  auto queued = push(b, 0, 1);
  auto pushpull = scheduler_->submit({{DataOp::PushPull, c.part(true, true, 7)}}, 0, nullptr);
  Sent sent_a = servers_->take();
  Sent pull = servers_->take();
  EXPECT_EQ(pull.op, DataOp::Pull);
  ASSERT_EQ(pull.slices.size(), 1u);
  EXPECT_EQ(pull.slices[0].info.part.key, 3u);
  EXPECT_EQ(pull.slices[0].round, 7);
  EXPECT_EQ(pull.slices[0].data_bytes, 0u);
  sent_a.ack();
  Sent pushes = servers_->take();
  EXPECT_EQ(pushes.op, DataOp::Push);
  EXPECT_EQ(keys_of(pushes), (std::vector<Key>{2, 3}));
  EXPECT_EQ(pushes.slices[1].round, 7);
  EXPECT_EQ(pushes.data(1), c.src);
  pushes.ack();
  EXPECT_FALSE(pushpull->done());
  pull.answer({5.0f});
  for (const auto& request : {first, queued, pushpull}) EXPECT_EQ(code_after_wait(request), std::nullopt);
  EXPECT_EQ(c.dst, std::vector<float>(4, 5.0f));
}

TEST_F(RequestSchedulerTest, AnAsyncPushPullStaysOneMessageInThePushLane) {
  start(1, false, 1);
  TestKey a(1, 4, 0, 1.0f), b(2, 4, 0, 2.0f);
  auto first = push(a, 0);
  auto pushpull = scheduler_->submit({{DataOp::PushPull, b.part(true, true)}}, 0, nullptr);
  Sent sent_a = servers_->take();
  EXPECT_EQ(servers_->untaken(), 0u);
  sent_a.ack();
  Sent sent_b = servers_->take();
  EXPECT_EQ(sent_b.op, DataOp::PushPull);
  sent_b.answer({6.0f});
  for (const auto& request : {first, pushpull}) EXPECT_EQ(code_after_wait(request), std::nullopt);
  EXPECT_EQ(b.dst, std::vector<float>(4, 6.0f));
}

TEST_F(RequestSchedulerTest, AReplyWithAnotherPartFailsThePullWithoutWritingIt) {
  start(1, false, 1);
  TestKey key(1, 4, 0, 0.0f);
  bool spread = false;
  auto done = scheduler_->submit({{DataOp::Pull, key.part(false, true)}}, 0, [&] { spread = true; });
  Sent sent = servers_->take();
  ps::PartInfo other = sent.slices[0].info;
  other.part.key = 2;
  ps::EncodedData encoded = ps::encode_data_reply({{other, -1, ps::part_bytes(other)}});
  std::memset(encoded.slice_data[0], 0x7f, ps::part_bytes(other));
  sent.reply(std::move(encoded.message));
  EXPECT_EQ(code_after_wait(done), ErrorCode::kProtocol);
  EXPECT_FALSE(spread);
  EXPECT_EQ(key.dst, std::vector<float>(4, 0.0f));
}

// A failed request nobody waited for is kept until a call reports it.
TEST_F(RequestSchedulerTest, AFailedRequestIsUnreportedUntilReported) {
  start(1, false, 1);
  TestKey a(1, 4, 0, 1.0f), b(2, 4, 0, 1.0f);
  auto first = push(a, 0);
  servers_->take().done(Error(ErrorCode::kNetwork, "dropped"), nullptr);
  EXPECT_EQ(code_after_wait(first), ErrorCode::kNetwork);
  EXPECT_EQ(scheduler_->take_unreported(), first);
  EXPECT_EQ(scheduler_->take_unreported(), nullptr);
  auto second = push(b, 0);
  servers_->take().done(Error(ErrorCode::kNetwork, "dropped"), nullptr);
  EXPECT_EQ(code_after_wait(second), ErrorCode::kNetwork);
  scheduler_->reported(second);
  EXPECT_EQ(scheduler_->take_unreported(), nullptr);
}

TEST_F(RequestSchedulerTest, OutstandingListsEachSubmittedRequestOnce) {
  Backlog b = backlog();
  EXPECT_EQ(scheduler_->take_outstanding(), (std::vector<std::shared_ptr<Completion>>{b.in_flight, b.queued}));
  EXPECT_TRUE(scheduler_->take_outstanding().empty());
  b.sent.ack();
  servers_->take().ack();
}

TEST_F(RequestSchedulerTest, SubmissionsAndRepliesCountAsProgress) {
  start(1, false, 1);
  TestKey key(1, 4, 0, 1.0f);
  const auto before_submit = std::chrono::steady_clock::now();
  auto done = push(key, 0);
  EXPECT_GE(scheduler_->last_progress(), before_submit);
  Sent sent = servers_->take();
  const auto before_reply = std::chrono::steady_clock::now();
  sent.ack();
  EXPECT_GE(scheduler_->last_progress(), before_reply);
  EXPECT_EQ(code_after_wait(done), std::nullopt);
}

TEST_F(RequestSchedulerTest, CloseFailsWhatIsStillQueuedWithClosed) {
  Backlog b = backlog();
  scheduler_->close();
  EXPECT_EQ(code_after_wait(b.queued), ErrorCode::kClosed);
  // What was in flight is the link's to answer.
  b.sent.ack();
  EXPECT_EQ(code_after_wait(b.in_flight), std::nullopt);
}

TEST_F(RequestSchedulerTest, ALinkFailureFailsWhatIsQueuedWithIt) {
  Backlog b = backlog();
  servers_->fail(Error(ErrorCode::kPeerLost, "server 0 lost"));
  EXPECT_EQ(code_after_wait(b.queued), ErrorCode::kPeerLost);
  b.sent.done(Error(ErrorCode::kPeerLost, "server 0 lost"), nullptr);
  EXPECT_EQ(code_after_wait(b.in_flight), ErrorCode::kPeerLost);
}

TEST_F(RequestSchedulerTest, AfterAbandonNoReplyTouchesCallerMemory) {
  start(1, false, 1);
  TestKey key(1, 4, 0, 0.0f);
  bool spread = false;
  auto done = scheduler_->submit({{DataOp::Pull, key.part(false, true)}}, 0, [&] { spread = true; });
  Sent sent = servers_->take();
  scheduler_->abandon(Error(ErrorCode::kTimedOut, "no reply"));
  ASSERT_TRUE(servers_->failure().has_value());
  EXPECT_EQ(servers_->failure()->code(), ErrorCode::kTimedOut);
  sent.answer({9.0f});
  EXPECT_EQ(code_after_wait(done), ErrorCode::kClosed);
  EXPECT_FALSE(spread);
  EXPECT_EQ(key.dst, std::vector<float>(4, 0.0f));
}

}  // namespace
}  // namespace dt::kvstore
