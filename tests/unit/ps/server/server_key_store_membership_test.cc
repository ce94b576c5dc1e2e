// The server key store's rounds when a worker left (departed) or was let in
// (joined) while the job runs.
#include <gtest/gtest.h>

#include "server_key_store_test_util.h"

namespace dt::ps {
namespace {

using namespace server_key_store_test;

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
