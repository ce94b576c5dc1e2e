#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "kvstore/local_kvstore.h"
#include "optim/optimizer_config.h"
#include "ps/server/key_store.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::Shape;

PartInfo info(uint64_t key, int64_t n) { return PartInfo{PartKey{key, 0, n}, DType::kFloat32, Shape({n})}; }

size_t bytes(const std::vector<float>& v) { return v.size() * sizeof(float); }

// Pulls and records the value (and whether it arrived) from the callback.
struct PullResult {
  bool done = false;
  std::vector<float> value;
  std::string error;
  ServerKeyStore::PullDone callback() {
    return [this](const Error* e, const ServerKeyStore::PullAnswer& a) {
      done = true;
      if (e) {
        error = e->what();
        return;
      }
      EXPECT_EQ(a.encoding, 0) << "no compression here";
      value.resize(a.bytes / sizeof(float));
      std::memcpy(value.data(), a.data, a.bytes);
    };
  }
};

ServerKeyStore::PushDone ignore_done() {
  return [](const Error* e) { ASSERT_EQ(e, nullptr) << e->what(); };
}

void init_all(ServerKeyStore& store, uint64_t key, const std::vector<float>& value) {
  for (int w = store.num_workers() - 1; w >= 0; --w) store.init(w, info(key, value.size()), value.data(), bytes(value));
}

TEST(PsDataServerKeyStore, SyncPullWaitsForEveryWorkersPushOfItsRound) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  init_all(store, 3, {1, 2});
  PullResult initial;
  store.pull(info(3, 2), 0, initial.callback());
  ASSERT_TRUE(initial.done);
  EXPECT_EQ(initial.value, (std::vector<float>{1, 2}));

  std::vector<float> g0 = {10, 20}, g1 = {0.5f, 0.25f};
  store.push(0, info(3, 2), 1, g0.data(), bytes(g0), ignore_done());
  PullResult round1;
  store.pull(info(3, 2), 1, round1.callback());
  EXPECT_FALSE(round1.done) << "round 1 is not complete before worker 1 pushed";
  store.push(1, info(3, 2), 1, g1.data(), bytes(g1), ignore_done());
  ASSERT_TRUE(round1.done);
  EXPECT_EQ(round1.value, (std::vector<float>{10.5f, 20.25f}));
}

TEST(PsDataServerKeyStore, RankOrderSumIsBitIdenticalWhateverTheArrivalOrder) {
  // Values whose float sum depends on the order of the additions.
  const std::vector<std::vector<float>> grads = {{1e8f, 1.0f, -3.3f}, {1.0f, 1e8f, 7.1f}, {-1e8f, -1e8f, 1e-7f}};
  std::vector<float> expected(3);
  for (size_t i = 0; i < 3; ++i) expected[i] = (grads[0][i] + grads[1][i]) + grads[2][i];
  std::vector<int> order = {0, 1, 2};
  int orders = 0;
  do {
    ServerKeyStore store(ServerKeyStore::Mode::kSync, 3);
    init_all(store, 1, {0, 0, 0});
    for (int w : order) store.push(w, info(1, 3), 1, grads[w].data(), bytes(grads[w]), ignore_done());
    PullResult result;
    store.pull(info(1, 3), 1, result.callback());
    ASSERT_TRUE(result.done);
    EXPECT_EQ(0, std::memcmp(result.value.data(), expected.data(), bytes(expected)))
        << "arrival order " << order[0] << order[1] << order[2];
    ++orders;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(orders, 6);
}

TEST(PsDataServerKeyStore, SecondPushOfARoundIsAnErrorNotADoubleCount) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  init_all(store, 3, {0});
  std::vector<float> g = {1};
  for (int64_t round = 1; round <= 7; ++round) {
    store.push(0, info(3, 1), round, g.data(), bytes(g), ignore_done());
    store.push(1, info(3, 1), round, g.data(), bytes(g), ignore_done());
  }
  store.push(1, info(3, 1), 8, g.data(), bytes(g), ignore_done());
  try {
    store.push(1, info(3, 1), 7, g.data(), bytes(g), ignore_done());
    FAIL() << "a repeated round must be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadState);
    EXPECT_STREQ(e.what(), "worker 1 pushed key 3 round 7 twice");
  }
  EXPECT_THROW(store.push(1, info(3, 1), 8, g.data(), bytes(g), ignore_done()), Error);
  store.push(0, info(3, 1), 8, g.data(), bytes(g), ignore_done());
  PullResult result;
  store.pull(info(3, 1), 8, result.callback());
  ASSERT_TRUE(result.done);
  EXPECT_EQ(result.value, std::vector<float>{2});  // the last sum, counted once
}

TEST(PsDataServerKeyStore, APushOneRoundAheadIsHeldUntilItsRoundStarts) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  init_all(store, 1, {0});
  std::vector<float> a = {1}, b = {2}, c = {100};
  store.push(0, info(1, 1), 1, a.data(), bytes(a), ignore_done());
  bool held_done = false;
  store.push(0, info(1, 1), 2, c.data(), bytes(c), [&](const Error* e) {
    EXPECT_EQ(e, nullptr);
    held_done = true;
  });
  EXPECT_FALSE(held_done) << "round 2 must wait for round 1";
  EXPECT_THROW(store.push(0, info(1, 1), 4, c.data(), bytes(c), ignore_done()), Error);
  store.push(1, info(1, 1), 1, b.data(), bytes(b), ignore_done());
  EXPECT_TRUE(held_done);
  PullResult r1;
  store.pull(info(1, 1), 1, r1.callback());
  ASSERT_TRUE(r1.done);
  EXPECT_EQ(r1.value, std::vector<float>{3});
  PullResult r2;
  store.pull(info(1, 1), 2, r2.callback());
  EXPECT_FALSE(r2.done);
  store.push(1, info(1, 1), 2, b.data(), bytes(b), ignore_done());
  ASSERT_TRUE(r2.done);
  EXPECT_EQ(r2.value, std::vector<float>{102});
}

TEST(PsDataServerKeyStore, RankZeroInitWinsAndOthersWaitForIt) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  std::vector<float> mine = {5, 5}, rank0 = {1, 2}, wrong = {1, 2, 3};
  store.init(1, info(2, 2), mine.data(), bytes(mine));
  PullResult early;
  store.pull(info(2, 2), 0, early.callback());
  EXPECT_FALSE(early.done) << "no value before rank 0's init";
  EXPECT_THROW(store.init(1, info(2, 2), mine.data(), bytes(mine)), Error);
  try {
    store.init(0, info(2, 3), wrong.data(), bytes(wrong));
    FAIL() << "a different shape must be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShapeMismatch);
  }
  store.init(0, info(2, 2), rank0.data(), bytes(rank0));
  ASSERT_TRUE(early.done);
  EXPECT_EQ(early.value, rank0);
  PullResult unknown;
  try {
    store.pull(info(99, 2), 0, unknown.callback());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

TEST(PsDataServerKeyStore, AsyncPushesApplyAtomicallyPerKey) {
  constexpr int kWorkers = 4, kPushes = 2000;
  ServerKeyStore store(ServerKeyStore::Mode::kAsync, kWorkers);
  store.set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 1.0).set("wd", 0.0));
  const int64_t n = 4096;
  init_all(store, 1, std::vector<float>(n, 0.0f));
  init_all(store, 2, std::vector<float>(1, 0.0f));
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      const std::vector<float> big(n, -1.0f), small = {-1.0f};
      for (int i = 0; i < kPushes; ++i) {
        store.push(w, info(1, n), -1, big.data(), bytes(big), ignore_done());
        store.push(w, info(2, 1), -1, small.data(), bytes(small), ignore_done());
      }
    });
  }
  for (auto& t : threads) t.join();
  PullResult big, small;
  store.pull(info(1, n), 0, big.callback());
  store.pull(info(2, 1), 0, small.callback());
  ASSERT_TRUE(big.done && small.done);
  for (float v : big.value) ASSERT_EQ(v, float(kWorkers * kPushes));  // sgd: w -= lr * (-1), integers exact
  EXPECT_EQ(small.value[0], float(kWorkers * kPushes));
}

TEST(PsDataServerKeyStore, OptimizerOnServerEqualsTheLocalKvstore) {
  const auto config = optim::OptimizerConfig("adam").set("learning_rate", 0.01).set("wd", 0.001);
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  store.set_optimizer(config);
  store.set_rescale_grad(0.125);
  kvstore::LocalKVStore local(kvstore::LocalKVStore::Reduce::kOnCpu);
  local.set_optimizer(config);
  local.set_rescale_grad(0.125);
  auto cpu = core::make_cpu_context();
  const int64_t n = 257;
  std::vector<float> w0(n), g0(n), g1(n);
  for (int64_t i = 0; i < n; ++i) w0[i] = 0.01f * float(i % 17) - 0.05f;
  auto array = [&](const std::vector<float>& v) {
    auto a = core::NDArray::empty(cpu, DType::kFloat32, Shape({n}));
    a.copy_from_host(v.data(), bytes(v));
    return a;
  };
  init_all(store, 4, w0);
  local.init({4}, {array(w0)});
  for (int64_t round = 1; round <= 5; ++round) {
    for (int64_t i = 0; i < n; ++i) {
      g0[i] = std::sin(float(i * round)) * 0.3f;
      g1[i] = std::cos(float(i + round)) * 0.7f;
    }
    store.push(1, info(4, n), round, g1.data(), bytes(g1), ignore_done());
    store.push(0, info(4, n), round, g0.data(), bytes(g0), ignore_done());
    local.push({4, 4}, {array(g0), array(g1)}, 0);
  }
  PullResult server;
  store.pull(info(4, n), 5, server.callback());
  ASSERT_TRUE(server.done);
  auto out = core::NDArray::empty(cpu, DType::kFloat32, Shape({n}));
  local.pull({4}, {out}, 0);
  std::vector<float> expected(n);
  out.copy_to_host(expected.data(), bytes(expected));
  EXPECT_EQ(0, std::memcmp(server.value.data(), expected.data(), bytes(expected)));

  const auto state = store.optimizer_state();
  bool found_mean = false;
  for (const auto& [name, a] : state) found_mean |= name == "4/0/257.mean";
  EXPECT_TRUE(found_mean);
}

// The settings-order race of a replicated job: worker 0 changes rescale_grad
// (the trainer does, for an epoch's last, smaller batch) once it has pulled
// round 1 from the part's first holder, whose round is complete; the second
// holder may still wait for worker 1's push of round 1 when the setting
// reaches it. Worker 0's push carries the numbers of its round, so both
// holders apply round 1 alike; a setting command alone would not.
TEST(PsDataServerKeyStore, ARoundIsAppliedWithTheNumbersWorker0PushedItWithWhateverTheSettingsSince) {
  const auto config = optim::OptimizerConfig("sgd").set("learning_rate", 0.1).set("momentum", 0.9);
  ServerKeyStore first(ServerKeyStore::Mode::kSync, 2), second(ServerKeyStore::Mode::kSync, 2),
      without_numbers(ServerKeyStore::Mode::kSync, 2);
  const std::vector<float> w0 = {0.5f, -0.25f, 1.0f};
  for (auto* store : {&first, &second, &without_numbers}) {
    store->set_optimizer(config);
    store->set_rescale_grad(1.0 / 64);
    init_all(*store, 9, w0);
  }
  const std::vector<float> g0 = {3.0f, -1.5f, 0.75f}, g1 = {-0.5f, 2.25f, 1.0f};
  const optim::UpdateNumbers round1{0.1, 1.0 / 64};
  // Round 1 completes on the first holder, and worker 0 pulls it there.
  first.push(0, info(9, 3), 1, g0.data(), bytes(g0), ignore_done(), false, -1, round1);
  first.push(1, info(9, 3), 1, g1.data(), bytes(g1), ignore_done());
  // The second holder has worker 0's push only when the setting comes.
  second.push(0, info(9, 3), 1, g0.data(), bytes(g0), ignore_done(), false, -1, round1);
  without_numbers.push(0, info(9, 3), 1, g0.data(), bytes(g0), ignore_done());
  for (auto* store : {&first, &second, &without_numbers}) {
    store->set_rescale_grad(1.0 / 32);
    store->set_learning_rate(0.07);
  }
  second.push(1, info(9, 3), 1, g1.data(), bytes(g1), ignore_done());
  without_numbers.push(1, info(9, 3), 1, g1.data(), bytes(g1), ignore_done());

  PullResult a, b, c;
  first.pull(info(9, 3), 1, a.callback());
  second.pull(info(9, 3), 1, b.callback());
  without_numbers.pull(info(9, 3), 1, c.callback());
  ASSERT_TRUE(a.done && b.done && c.done);
  EXPECT_EQ(0, std::memcmp(a.value.data(), b.value.data(), bytes(a.value)));
  EXPECT_NE(0, std::memcmp(a.value.data(), c.value.data(), bytes(a.value)))
      << "the setting alone would have changed round 1 on the second holder";

  // Round 2 with the new numbers: the holders stay alike, and the setting
  // as the servers keep it is the last one.
  const optim::UpdateNumbers round2{0.07, 1.0 / 32};
  for (auto* store : {&first, &second}) {
    store->push(1, info(9, 3), 2, g1.data(), bytes(g1), ignore_done());
    store->push(0, info(9, 3), 2, g0.data(), bytes(g0), ignore_done(), false, -1, round2);
  }
  PullResult a2, b2;
  first.pull(info(9, 3), 2, a2.callback());
  second.pull(info(9, 3), 2, b2.callback());
  ASSERT_TRUE(a2.done && b2.done);
  EXPECT_EQ(0, std::memcmp(a2.value.data(), b2.value.data(), bytes(a2.value)));
  EXPECT_NE(0, std::memcmp(a.value.data(), a2.value.data(), bytes(a.value)));
  EXPECT_EQ(second.rescale_grad(), 1.0 / 32);
  EXPECT_EQ(second.learning_rate(), 0.07);
}

// Numbers from a worker other than 0 never count: worker 0 owns the
// settings (the request handler refuses such a push before it gets here).
TEST(PsDataServerKeyStore, OnlyWorker0sNumbersApplyItsRound) {
  const auto config = optim::OptimizerConfig("sgd").set("learning_rate", 0.1);
  ServerKeyStore plain(ServerKeyStore::Mode::kSync, 2), told(ServerKeyStore::Mode::kSync, 2);
  const std::vector<float> w0 = {1.0f, 2.0f}, g = {0.5f, -0.5f};
  for (auto* store : {&plain, &told}) {
    store->set_optimizer(config);
    init_all(*store, 2, w0);
    store->push(0, info(2, 2), 1, g.data(), bytes(g), ignore_done());
  }
  plain.push(1, info(2, 2), 1, g.data(), bytes(g), ignore_done());
  told.push(1, info(2, 2), 1, g.data(), bytes(g), ignore_done(), false, -1, optim::UpdateNumbers{5.0, 3.0});
  PullResult a, b;
  plain.pull(info(2, 2), 1, a.callback());
  told.pull(info(2, 2), 1, b.callback());
  ASSERT_TRUE(a.done && b.done);
  EXPECT_EQ(a.value, b.value);
}

TEST(PsDataServerKeyStore, FailAnswersWaitingPullsAndRefusesLaterCalls) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  init_all(store, 1, {0});
  PullResult waiting;
  store.pull(info(1, 1), 1, waiting.callback());
  store.fail(Error(ErrorCode::kPeerLost, "worker 1 lost"));
  ASSERT_TRUE(waiting.done);
  EXPECT_EQ(waiting.error, "worker 1 lost");
  std::vector<float> g = {1};
  try {
    store.push(0, info(1, 1), 1, g.data(), bytes(g), ignore_done());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost);
  }
}

// Issue 19, DT_WORKER_LOSS=continue on the server side: dist_sync rounds
// stop waiting for a departed worker, still sum in rank order, count the
// pushes it made before it left, and refuse the ones after.
void push(ServerKeyStore& store, int worker, int64_t round, std::vector<float> g) {
  store.push(worker, info(1, static_cast<int64_t>(g.size())), round, g.data(), bytes(g), ignore_done());
}

std::vector<float> pull(ServerKeyStore& store, int64_t round) {
  PullResult r;
  store.pull(info(1, 1), round, r.callback());
  EXPECT_TRUE(r.done) << "round " << round << " is not complete";
  EXPECT_EQ(r.error, "") << "round " << round;
  return r.value;
}

TEST(PsDataServerKeyStoreDeparted, ARoundWaitingOnlyForTheDepartedWorkerCompletes) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 3);
  init_all(store, 1, {0});
  push(store, 0, 1, {1});
  push(store, 2, 1, {4});  // staged: rank 1 comes first
  PullResult waiting;
  store.pull(info(1, 1), 1, waiting.callback());
  EXPECT_FALSE(waiting.done);
  store.worker_departed(1);
  ASSERT_TRUE(waiting.done) << "the round waited only for worker 1";
  EXPECT_EQ(waiting.value, (std::vector<float>{5}));
  // Later rounds expect workers 0 and 2 only.
  push(store, 2, 2, {8});
  push(store, 0, 2, {16});
  EXPECT_EQ(pull(store, 2), (std::vector<float>{24}));
}

TEST(PsDataServerKeyStoreDeparted, PushesMadeBeforeLeavingCountAndLaterOnesAreRefused) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 3);
  init_all(store, 1, {0});
  push(store, 1, 1, {2});
  push(store, 1, 2, {32});  // held: a round ahead
  store.worker_departed(1);
  push(store, 0, 1, {1});
  push(store, 2, 1, {4});
  EXPECT_EQ(pull(store, 1), (std::vector<float>{7})) << "worker 1's push of round 1 arrived before it left";
  push(store, 0, 2, {8});
  push(store, 2, 2, {16});
  EXPECT_EQ(pull(store, 2), (std::vector<float>{56})) << "its held push of round 2 counts too";
  push(store, 0, 3, {1});
  push(store, 2, 3, {1});
  EXPECT_EQ(pull(store, 3), (std::vector<float>{2})) << "round 3 waits for nobody else";
  std::vector<float> late = {100};
  try {
    store.push(1, info(1, 1), 3, late.data(), bytes(late), ignore_done());
    FAIL() << "a departed worker's push was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost);
    EXPECT_NE(std::string(e.what()).find("worker 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pull(store, 3), (std::vector<float>{2}));
  EXPECT_TRUE(store.has_departed(1));
  EXPECT_FALSE(store.has_departed(0));
}

TEST(PsDataServerKeyStoreDeparted, WorkerZeroMayLeaveAndTheSumStaysInRankOrder) {
  // 0.1f + 0.2f + 0.3f differs by association; the survivors' sum must be
  // (g1 + g2) exactly, with nothing of worker 0 in it.
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 3);
  init_all(store, 1, {0});
  store.worker_departed(0);
  store.worker_departed(0);  // idempotent
  push(store, 2, 1, {0.3f});
  push(store, 1, 1, {0.2f});
  EXPECT_EQ(pull(store, 1), (std::vector<float>{0.2f + 0.3f}));
}

TEST(PsDataServerKeyStoreDeparted, AsyncRefusesTheDepartedWorkerOnly) {
  ServerKeyStore store(ServerKeyStore::Mode::kAsync, 2);
  init_all(store, 1, {0});
  store.worker_departed(1);
  push(store, 0, 0, {3});
  EXPECT_EQ(pull(store, 0), (std::vector<float>{3}));
  std::vector<float> g = {1};
  EXPECT_THROW(store.push(1, info(1, 1), 0, g.data(), bytes(g), ignore_done()), Error);
  store.worker_departed(7);  // out of range: ignored
}


// A worker joining the running job in the place of one it went on without
// (DataOp Join; docs/fault-tolerance.md).
TEST(PsDataServerKeyStoreJoined, RoundsWaitForTheJoinedWorkerFromItsRoundOn) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 3);
  init_all(store, 1, {0});
  store.worker_departed(1, 100);
  push(store, 0, 1, {1});
  push(store, 2, 1, {4});
  EXPECT_EQ(pull(store, 1), (std::vector<float>{5})) << "round 1 went on without worker 1";
  // Round 2 is open: the earliest to join at is the round after it.
  EXPECT_EQ(store.join_floor(1), 3);
  store.join(1, 200, 3);
  EXPECT_FALSE(store.has_departed(1));
  // Its init of a part that exists leaves the job's value as it is.
  const std::vector<float> fresh = {1000};
  store.init(1, info(1, 1), fresh.data(), bytes(fresh));
  push(store, 0, 2, {8});
  push(store, 2, 2, {16});
  EXPECT_EQ(pull(store, 2), (std::vector<float>{24})) << "round 2 is before its join";
  push(store, 2, 3, {0.25f});
  push(store, 0, 3, {0.5f});
  PullResult waiting;
  store.pull(info(1, 1), 3, waiting.callback());
  EXPECT_FALSE(waiting.done) << "round 3 waits for the joined worker";
  push(store, 1, 3, {2});
  ASSERT_TRUE(waiting.done);
  EXPECT_EQ(waiting.value, (std::vector<float>{(0.5f + 2.0f) + 0.25f})) << "summed in rank order, with it";
}

TEST(PsDataServerKeyStoreJoined, AJoinBehindTheRoundsIsRefusedAndMayMoveForward) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  init_all(store, 1, {0});
  store.worker_departed(1, 100);
  push(store, 0, 1, {1});
  push(store, 0, 2, {1});
  push(store, 0, 3, {1});
  try {
    store.join(1, 200, 3);
    FAIL() << "a join at a round already applied was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadState);
    EXPECT_NE(std::string(e.what()).find("ask again"), std::string::npos) << e.what();
  }
  store.join(1, 200, 5);
  store.join(1, 200, 6);  // again, later: round 5 no longer waits for it
  push(store, 0, 4, {1});
  push(store, 0, 5, {1});
  EXPECT_EQ(pull(store, 5), (std::vector<float>{1}));
  std::vector<float> g = {2};
  EXPECT_THROW(store.push(1, info(1, 1), 5, g.data(), bytes(g), ignore_done()), Error) << "its first round is 6";
  push(store, 1, 6, {2});
  push(store, 0, 6, {1});
  EXPECT_EQ(pull(store, 6), (std::vector<float>{3}));
  EXPECT_THROW(store.join(1, 200, 9), Error) << "it pushed since it joined";
}

TEST(PsDataServerKeyStoreJoined, LateNewsOfThePredecessorIsIgnoredAndASecondLossCounts) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  init_all(store, 1, {0});
  push(store, 1, 1, {2});
  // The joiner arrives before the news of its predecessor's loss: the join
  // itself ends the predecessor's rounds after its last push.
  store.join(1, 200, 3);
  push(store, 0, 1, {1});
  EXPECT_EQ(pull(store, 1), (std::vector<float>{3})) << "the predecessor's push of round 1 counts";
  push(store, 0, 2, {1});
  EXPECT_EQ(pull(store, 2), (std::vector<float>{1})) << "round 2 went on without worker 1";
  store.worker_departed(1, 100);  // the predecessor's loss, late
  EXPECT_FALSE(store.has_departed(1));
  push(store, 1, 3, {2});
  push(store, 0, 3, {1});
  EXPECT_EQ(pull(store, 3), (std::vector<float>{3}));
  store.worker_departed(1, 200);  // the joined worker lost in turn
  EXPECT_TRUE(store.has_departed(1));
  push(store, 0, 4, {1});
  EXPECT_EQ(pull(store, 4), (std::vector<float>{1}));
  store.join(1, 300, 6);
  push(store, 0, 5, {1});
  EXPECT_EQ(pull(store, 5), (std::vector<float>{1}));
}

TEST(PsDataServerKeyStoreJoined, APartMadeWhileAWorkerWasAwayWaitsForItAfterItJoined) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  init_all(store, 1, {0});
  store.worker_departed(1, 100);
  const std::vector<float> zero = {0};
  store.init(0, info(2, 1), zero.data(), bytes(zero));
  std::vector<float> g = {1};
  store.push(0, info(2, 1), 1, g.data(), bytes(g), ignore_done());
  PullResult first;
  store.pull(info(2, 1), 1, first.callback());
  EXPECT_TRUE(first.done) << "key 2's round 1 goes on without worker 1";
  store.join(1, 200, 3);
  store.init(1, info(2, 1), zero.data(), bytes(zero));
  store.push(0, info(2, 1), 2, g.data(), bytes(g), ignore_done());
  store.push(0, info(2, 1), 3, g.data(), bytes(g), ignore_done());
  PullResult third;
  store.pull(info(2, 1), 3, third.callback());
  EXPECT_FALSE(third.done) << "key 2's round 3 waits for the joined worker";
  store.push(1, info(2, 1), 3, g.data(), bytes(g), ignore_done());
  ASSERT_TRUE(third.done);
  EXPECT_EQ(third.value, (std::vector<float>{2}));
}


// Both workers lost, and their successors join at a later round: the rounds
// in between are empty (nobody takes part) and must not hold the job up.
TEST(PsDataServerKeyStoreJoined, RoundsNobodyTakesPartInAreEmptyAndTheRoundsGoOn) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  init_all(store, 1, {0});
  push(store, 0, 1, {1});
  push(store, 1, 1, {2});
  EXPECT_EQ(pull(store, 1), (std::vector<float>{3}));
  push(store, 0, 2, {4});  // round 2: worker 1 is lost before its push
  store.worker_departed(1, 100);
  EXPECT_EQ(pull(store, 2), (std::vector<float>{4}));
  store.join(1, 200, 5);
  PullResult fourth;
  store.pull(info(1, 1), 4, fourth.callback());
  EXPECT_FALSE(fourth.done) << "round 3 waits for worker 0";
  store.worker_departed(0, 0);  // lost before its push of round 3
  ASSERT_TRUE(fourth.done) << "rounds 3 and 4 have nobody, and worker 1 joined for round 5: empty";
  EXPECT_EQ(fourth.value, (std::vector<float>{0})) << "without an optimizer the stored value is the sum: of nothing";
  EXPECT_EQ(store.join_floor(0), 6);
  store.join(0, 300, 6);
  push(store, 1, 5, {2});
  EXPECT_EQ(pull(store, 5), (std::vector<float>{2}));
  push(store, 1, 6, {2});
  push(store, 0, 6, {1});
  EXPECT_EQ(pull(store, 6), (std::vector<float>{3}));
}

TEST(PsDataServerKeyStoreJoined, AnEmptyRoundLeavesTheWeightsAsTheyAre) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 1);
  store.set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 1.0).set("momentum", 0.5));
  const std::vector<float> init = {10};
  store.init(0, info(1, 1), init.data(), bytes(init));
  push(store, 0, 1, {1});
  EXPECT_EQ(pull(store, 1), (std::vector<float>{9}));
  store.worker_departed(0, 100);
  store.join(0, 200, 4);
  EXPECT_EQ(pull(store, 3), (std::vector<float>{9})) << "rounds 2 and 3: no update, not even momentum";
  push(store, 0, 4, {1});
  EXPECT_EQ(pull(store, 4), (std::vector<float>{9 - 1 - 0.5f}));
}

}  // namespace
}  // namespace dt::ps
