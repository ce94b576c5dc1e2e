// Issue 19, DT_WORKER_LOSS=continue on the server side: dist_sync rounds
// stop waiting for a departed worker, still sum in rank order, count the
// pushes it made before it left, and refuse the ones after.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "ps/roles/server_key_store.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::Shape;

PartInfo info(uint64_t key, int64_t n) { return PartInfo{PartKey{key, 0, n}, DType::kFloat32, Shape({n})}; }

size_t bytes(const std::vector<float>& v) { return v.size() * sizeof(float); }

struct PullResult {
  bool done = false;
  std::vector<float> value;
  ServerKeyStore::PullDone callback() {
    return [this](const Error* e, const ServerKeyStore::PullAnswer& a) {
      done = true;
      ASSERT_EQ(e, nullptr) << e->what();
      value.resize(a.bytes / sizeof(float));
      std::memcpy(value.data(), a.data, a.bytes);
    };
  }
};

ServerKeyStore::PushDone ok() {
  return [](const Error* e) { ASSERT_EQ(e, nullptr) << e->what(); };
}

void init_all(ServerKeyStore& store, uint64_t key, const std::vector<float>& value) {
  for (int w = store.num_workers() - 1; w >= 0; --w) store.init(w, info(key, value.size()), value.data(), bytes(value));
}

void push(ServerKeyStore& store, int worker, int64_t round, std::vector<float> g) {
  store.push(worker, info(1, static_cast<int64_t>(g.size())), round, g.data(), bytes(g), ok());
}

std::vector<float> pull(ServerKeyStore& store, int64_t round) {
  PullResult r;
  store.pull(info(1, 1), round, r.callback());
  EXPECT_TRUE(r.done) << "round " << round << " is not complete";
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
    store.push(1, info(1, 1), 3, late.data(), bytes(late), ok());
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
  EXPECT_THROW(store.push(1, info(1, 1), 0, g.data(), bytes(g), ok()), Error);
  store.worker_departed(7);  // out of range: ignored
}

}  // namespace
}  // namespace dt::ps
