// The server key store's rounds: pulls wait for every worker's push, sums in
// rank order, pushes ahead or twice, init, async pushes and the optimizer.
// Workers that left or joined: server_key_store_membership_test.cc.
#include <gtest/gtest.h>

#include "server_key_store_test_util.h"

namespace dt::ps {
namespace {

using namespace server_key_store_test;

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

}  // namespace
}  // namespace dt::ps
