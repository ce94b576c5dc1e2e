// The request scheduler against fake servers that answer when the test says
// so: which messages leave, in what order, fused how, and what replies,
// failures and close() do to the requests.
#include "kvstore/request_scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "error_code_of.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/limits.h"

namespace dt::kvstore {
namespace {

using core::Error;
using core::ErrorCode;
using ps::wire::DataOp;
using test_support::code_of;

constexpr auto kDeadline = std::chrono::seconds(10);

// A message the scheduler sent, decoded, and how to answer it.
struct Sent {
  int server = -1;
  DataOp op = DataOp::Init;
  int worker_rank = -1;
  std::string text;
  std::vector<ps::DecodedSlice> slices;  // their data points into frame
  std::shared_ptr<ps::Frame> frame;
  std::thread::id thread;  // the thread that sent it
  ps::WorkerClient::Done done;

  std::vector<float> data(size_t slice) const {
    std::vector<float> out(slices.at(slice).data_bytes / sizeof(float));
    std::memcpy(out.data(), slices.at(slice).data, slices.at(slice).data_bytes);
    return out;
  }
  void reply(ps::Message message) {
    const ps::Frame parsed = ps::Frame::parse(std::move(message));
    done(std::nullopt, &parsed);
  }
  // Answers a push or init.
  void ack() { reply(ps::encode_data_reply({}).message); }
  // Answers a push whose slices a new copy keeps until it is filled.
  void ack_held() { reply(ps::encode_held_push_reply()); }
  // Answers a pull with one value per slice, each repeated over its part.
  void answer(const std::vector<float>& values) {
    std::vector<ps::SliceSpec> specs;
    for (const ps::DecodedSlice& s : slices) specs.push_back({s.info, s.round, ps::part_bytes(s.info)});
    ps::EncodedData encoded = ps::encode_data_reply(specs);
    for (size_t i = 0; i < specs.size(); ++i) {
      const std::vector<float> part(specs[i].data_bytes / sizeof(float), values.at(i));
      std::memcpy(encoded.slice_data[i], part.data(), specs[i].data_bytes);
    }
    reply(std::move(encoded.message));
  }
};

class FakeServers final : public RequestScheduler::Link {
 public:
  explicit FakeServers(int num_servers) : num_servers_(num_servers) {}

  int num_servers() const override { return num_servers_; }
  void send(int server, ps::Message request, ps::WorkerClient::Done done, bool /*may_resend*/) override {
    Sent sent;
    sent.server = server;
    sent.frame = std::make_shared<ps::Frame>(ps::Frame::parse(std::move(request)));
    const auto& body = sent.frame->expect<ps::wire::DataRequest>();
    sent.op = body.op();
    sent.worker_rank = body.worker_rank();
    sent.text = body.text() ? body.text()->str() : "";
    if (body.slices() != nullptr) {
      for (const auto* slice : *body.slices()) sent.slices.push_back(ps::decode_slice(*sent.frame, slice));
    }
    sent.thread = std::this_thread::get_id();
    sent.done = std::move(done);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sent_.push_back(std::move(sent));
    }
    cv_.notify_all();
  }
  std::optional<Error> failure() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }
  void fail(const Error& error) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_) failure_ = error;
  }
  void drop_server(int server) override {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped_.push_back(server);
    link_events_.push_back("drop " + std::to_string(server));
  }
  void reconnect_server(const ps::NodeInfo& server) override {
    std::lock_guard<std::mutex> lock(mutex_);
    link_events_.push_back("reconnect " + std::to_string(server.rank) + " pid " + std::to_string(server.pid));
  }
  // Drops and reconnects, in order ("drop 1", "reconnect 1 pid 42").
  std::vector<std::string> link_events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return link_events_;
  }
  std::vector<int> dropped() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return dropped_;
  }

  // The oldest message not taken yet, waiting up to kDeadline for one.
  Sent take() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, kDeadline, [&] { return !sent_.empty(); })) {
      throw std::runtime_error("no message within the deadline");
    }
    Sent sent = std::move(sent_.front());
    sent_.pop_front();
    return sent;
  }
  size_t untaken() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sent_.size();
  }

 private:
  const int num_servers_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Sent> sent_;
  std::optional<Error> failure_;
  std::vector<int> dropped_;
  std::vector<std::string> link_events_;
};

// A float32 key of numel elements on one server, with its own push data
// (all `value`) and pull target.
struct TestKey {
  TestKey(Key id, int64_t numel, int server, float value)
      : id(id), server(server), shape({numel}), src(static_cast<size_t>(numel), value),
        dst(static_cast<size_t>(numel), 0.0f) {}
  RequestScheduler::Part part(bool push, bool pull, int64_t round = -1) {
    return part_range(0, shape.numel(), push, pull, round);
  }
  RequestScheduler::Part part_range(int64_t begin, int64_t end, bool push, bool pull, int64_t round = -1) {
    return RequestScheduler::Part{id,
                                  core::DType::kFloat32,
                                  &shape,
                                  ps::PartRange{server, begin, end},
                                  round,
                                  push ? reinterpret_cast<const uint8_t*>(src.data()) : nullptr,
                                  pull ? reinterpret_cast<uint8_t*>(dst.data()) : nullptr};
  }

  Key id;
  int server;
  core::Shape shape;
  std::vector<float> src;
  std::vector<float> dst;
};

class RequestSchedulerTest : public ::testing::Test {
 protected:
  void start(int num_servers, bool sync, int window, int worker_rank = 0, bool replicated = false,
             std::chrono::milliseconds verdict_wait = std::chrono::seconds(10)) {
    auto servers = std::make_unique<FakeServers>(num_servers);
    servers_ = servers.get();
    scheduler_.reset();
    scheduler_ = std::make_unique<RequestScheduler>(std::move(servers), worker_rank, sync, window, replicated,
                                                    verdict_wait);
  }
  // The next n messages, ordered by (server, op): the order in which lanes
  // send is not part of the contract.
  std::vector<Sent> take_sorted(size_t n) {
    std::vector<Sent> sent;
    for (size_t i = 0; i < n; ++i) sent.push_back(servers_->take());
    std::sort(sent.begin(), sent.end(), [](const Sent& a, const Sent& b) {
      return std::make_pair(a.server, static_cast<int>(a.op)) < std::make_pair(b.server, static_cast<int>(b.op));
    });
    return sent;
  }
  std::shared_ptr<Completion> push(TestKey& key, int priority, int64_t round = -1) {
    return scheduler_->submit({{DataOp::Push, key.part(true, false, round)}}, priority, nullptr);
  }
  // Replicated, 2 servers: first_'s push, acknowledged by server 1 and
  // failed by a dropped connection to server 0, waiting for the verdict.
  std::shared_ptr<Completion> park_a_push() {
    auto done = push(first_, 0, 1);
    std::vector<Sent> sent = take_sorted(2);
    sent[1].ack();
    sent[0].done(Error(ErrorCode::kNetwork, "connection closed"), nullptr);
    EXPECT_FALSE(done->wait_for(std::chrono::milliseconds(20)));
    return done;
  }
  static std::vector<Key> keys_of(const Sent& sent) {
    std::vector<Key> keys;
    for (const ps::DecodedSlice& s : sent.slices) keys.push_back(s.info.part.key);
    return keys;
  }
  static std::optional<ErrorCode> code_after_wait(const std::shared_ptr<Completion>& request) {
    EXPECT_TRUE(request->wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(kDeadline)));
    const auto error = request->error();
    return error ? std::optional<ErrorCode>(error->code()) : std::nullopt;
  }

  // One server, window 1: first_ pushed and in flight, second_ queued
  // behind it.
  struct Backlog {
    std::shared_ptr<Completion> in_flight;
    std::shared_ptr<Completion> queued;
    Sent sent;  // first_'s message
  };
  Backlog backlog() {
    start(1, false, 1);
    Backlog backlog;
    backlog.in_flight = push(first_, 0);
    backlog.queued = push(second_, 0);
    backlog.sent = servers_->take();
    return backlog;
  }

  TestKey first_{1, 4, 0, 1.0f};
  TestKey second_{2, 4, 0, 2.0f};
  FakeServers* servers_ = nullptr;  // owned by scheduler_
  std::unique_ptr<RequestScheduler> scheduler_;
};

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

// ---- replicated servers (DT_SERVER_REPLICATION=1) ---------------------------

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
