// ServerKeyStore::open_rounds (the stall inspector's look at a server): a
// dist_sync round some workers pushed names the others, until it applies;
// departed workers are not waited for; dist_async has no rounds to wait in.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "ps/server/key_store.h"

namespace dt::ps {
namespace {

PartInfo info(uint64_t key, int64_t n) { return PartInfo{PartKey{key, 0, n}, core::DType::kFloat32, core::Shape({n})}; }

ServerKeyStore::PushDone ignore_done() {
  return [](const core::Error* e) { ASSERT_EQ(e, nullptr) << e->what(); };
}

TEST(PsServerKeyStoreWaits, AnOpenRoundNamesTheWorkersNotYetPushed) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 3);
  const std::vector<float> value = {1, 2};
  for (int w = 2; w >= 0; --w) store.init(w, info(7, 2), value.data(), sizeof(float) * 2);
  EXPECT_TRUE(store.open_rounds().empty());  // nobody pushed: nothing waits
  store.push(0, info(7, 2), 1, value.data(), sizeof(float) * 2, ignore_done());
  std::vector<core::OpenWait> waits = store.open_rounds();
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].waits_for, (std::vector<int>{1, 2}));
  EXPECT_EQ(waits[0].what, "round 1 of key 7 [0, 2) waits for workers {1, 2}");
  const std::string first_id = waits[0].id;
  store.push(2, info(7, 2), 1, value.data(), sizeof(float) * 2, ignore_done());
  waits = store.open_rounds();
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].waits_for, std::vector<int>{1});
  EXPECT_EQ(waits[0].id, first_id);  // the same round: the same wait
  // A departed worker is not waited for: the round applies without it.
  store.worker_departed(1);
  EXPECT_TRUE(store.open_rounds().empty());
}

TEST(PsServerKeyStoreWaits, AsyncHasNoRoundsToWaitIn) {
  ServerKeyStore store(ServerKeyStore::Mode::kAsync, 2);
  const std::vector<float> value = {1};
  for (int w = 1; w >= 0; --w) store.init(w, info(1, 1), value.data(), sizeof(float));
  store.push(0, info(1, 1), 0, value.data(), sizeof(float), ignore_done());
  EXPECT_TRUE(store.open_rounds().empty());
}

}  // namespace
}  // namespace dt::ps
