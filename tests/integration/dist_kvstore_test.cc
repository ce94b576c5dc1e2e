// The data plane for real: scheduler, servers and workers as threads over
// inproc exchanging tensors through dist_sync / dist_async kvstores. This
// file: sums, big keys, full windows, exactness against the local kvstore,
// async pushes and checkpoint resume; dist_kvstore/ holds compression,
// failures and asynchronous requests. Every wait has a deadline.
#include <gtest/gtest.h>

#include "dist_kvstore/dist_kvstore_test_util.h"

namespace dt::ps {
namespace {

using namespace dist_kvstore_test;

TEST(PsDataInproc, SyncPushPullSumsWorkersAndSplitsBigKeys) {
  InprocJob job("basic", 2, 2);
  const int64_t big = 5000;  // 20000 bytes > bound: split across both servers
  auto run = [&](int rank) {
    auto kv = job.worker("dist_sync", rank);
    EXPECT_EQ(kv->rank(), rank);
    EXPECT_EQ(kv->num_workers(), 2);
    std::vector<float> init_big(big);
    for (int64_t i = 0; i < big; ++i) init_big[i] = float(i) * (rank == 0 ? 1.0f : -7.0f);
    kv->init({1, 2, 3}, {array({1, 2, 3}), array({float(rank)}), array(init_big)});
    NDArray out_big = array(std::vector<float>(big, 0));
    NDArray out1 = array({0, 0, 0});
    kv->pull({1, 3}, {out1, out_big}, 0);
    EXPECT_EQ(values(out1), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(values(out_big)[4999], 4999.0f) << "rank 0's init wins";
    for (int step = 1; step <= 3; ++step) {
      std::vector<float> g(big, float(rank + 1) * step);
      NDArray a = array({float(rank), 1, 2}), b = array({10, 10, 10});
      // Two values under key 1 are summed locally first (the multi-device case).
      kv->pushpull({1, 1, 3}, {a, b, array(g)}, {out1, out1, out_big}, 0);
      // (0 + 10) + (1 + 10), (1 + 10) * 2, (2 + 10) * 2: summed over values, then workers.
      EXPECT_EQ(values(out1), (std::vector<float>{21, 22, 24})) << "step " << step;
      for (float v : values(out_big)) ASSERT_EQ(v, 3.0f * step);
    }
    kv->barrier();
  };
  on_two_workers(run, 30s);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, TwelveWorkersKeepFullWindowsAndServersHaveASlotForEachMessage) {
  // 12 workers x 2 lanes x 4 messages: more than a fixed 16 server slots,
  // which once forced a window of one above 8 workers (and could still run
  // out of slots with held pushes). Servers now hold any number of requests
  // (a held one is replaced by a fresh context) but refuse more than
  // kRequestsPerWorker from one connection: both lanes must fit.
  constexpr int kWorkers = 12;
  EXPECT_GE(kRequestsPerWorker, 2 * kLaneWindow + 1);
  InprocJob job("twelve", 1, kWorkers);
  std::vector<std::future<void>> workers;
  for (int rank = 0; rank < kWorkers; ++rank) {
    workers.push_back(std::async(std::launch::async, [rank] {
      auto kv = std::make_unique<kvstore::DistKVStore>(
          "dist_sync", inproc_job(inproc_url("twelve"), Role::kWorker, 1, kWorkers, rank), fast_options());
      EXPECT_EQ(kv->max_in_flight_per_server(), kLaneWindow);
      const std::vector<uint64_t> keys = {1, 2, 3, 4, 5, 6};
      std::vector<NDArray> grads, outs;
      for (size_t k = 0; k < keys.size(); ++k) {
        grads.push_back(array({float(rank), 1}));
        outs.push_back(array({0, 0}));
      }
      kv->init(keys, grads);
      for (int step = 0; step < 3; ++step) {
        // Pushes alone first (a round ahead is held on the server), then
        // every key's pushpull in its own request, in a rank-dependent order.
        for (size_t k = 0; k < keys.size(); ++k) kv->push_async({keys[k]}, {grads[k]}, 0);
        for (size_t i = 0; i < keys.size(); ++i) {
          const size_t k = (i + static_cast<size_t>(rank)) % keys.size();
          kv->pushpull_async({keys[k]}, {grads[k]}, {outs[k]}, 0);
        }
        kv->wait_all();
        // 0 + 1 + ... + 11 = 66 and 12 ones, whatever the order.
        for (const NDArray& out : outs) EXPECT_EQ(values(out), (std::vector<float>{66, 12}));
      }
    }));
  }
  for (auto& w : workers) ASSERT_EQ(w.wait_for(60s), std::future_status::ready) << "a worker hung";
  for (auto& w : workers) w.get();
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, DistSyncLenetIsBitIdenticalToALocalKvstoreAndToItself) {
  const auto expected = reference_weights();
  const auto first = dist_weights("exact-1");
  const auto second = dist_weights("exact-2");
  ASSERT_EQ(first.size(), expected.size());
  EXPECT_EQ(0, std::memcmp(first.data(), expected.data(), expected.size() * sizeof(float)))
      << "dist_sync differs from the local kvstore";
  EXPECT_EQ(0, std::memcmp(first.data(), second.data(), first.size() * sizeof(float))) << "runs differ";
}

TEST(PsDataInproc, AsyncPushesAreAllApplied) {
  InprocJob job("async", 2, 2);
  auto run = [&](int rank) {
    auto kv = job.worker("dist_async", rank);
    kv->init({5}, {array(std::vector<float>(3000, 0.0f))});
    kv->set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 1.0).set("wd", 0.0));
    for (int i = 0; i < 50; ++i) kv->push({5}, {array(std::vector<float>(3000, -1.0f))}, 0);
    kv->barrier();
    NDArray out = array(std::vector<float>(3000, 0.0f));
    kv->pull({5}, {out}, 0);
    for (float v : values(out)) EXPECT_EQ(v, 100.0f);
    const auto state = kv->optimizer_state("opt.");
    EXPECT_FALSE(state.empty());
  };
  on_two_workers(run, 30s);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

// ---- resuming update_on_kvstore checkpoints -------------------------------

// Each worker trains `steps` steps (from its checkpoint `load` when given,
// saving to `save` when given) in a fresh 2 x 2 job; returns worker 0's weights.
std::vector<float> checkpointed_run(const std::string& name, int steps, const std::string& load,
                                    const std::string& save) {
  InprocJob job(name, 2, 2);
  auto run = [&](int rank) {
    auto net = lenet();
    train::Trainer trainer(net, sgd(0.025), std::shared_ptr<kvstore::KVStore>(job.worker("dist_sync", rank)));
    EXPECT_TRUE(trainer.update_on_kvstore());
    if (!load.empty()) trainer.load_checkpoint(load + std::to_string(rank));
    const auto [images, labels] = batch(rank * 8, rank * 8 + 8);
    for (int step = 0; step < steps; ++step) trainer.train_batch(images, labels);
    if (!save.empty()) trainer.save_checkpoint(save + std::to_string(rank));
    return weights(*net);
  };
  const std::vector<float> a = on_two_workers(run).first;
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  return a;
}

TEST(PsDataInproc, UpdateOnKvstoreCheckpointResumesBitForBit) {
  const std::string path = "/tmp/dt-dist-resume-" + std::to_string(::getpid()) + "-";
  const auto uninterrupted = checkpointed_run("resume-all", 4, "", "");
  checkpointed_run("resume-first", 2, "", path);
  const auto resumed = checkpointed_run("resume-second", 2, path, "");
  ASSERT_EQ(resumed.size(), uninterrupted.size());
  EXPECT_EQ(0, std::memcmp(resumed.data(), uninterrupted.data(), resumed.size() * sizeof(float)))
      << "the resumed job differs from the uninterrupted one";
  // The control: weights alone (the servers' momentum lost) do not resume exactly.
  const auto weights_only = [&] {
    InprocJob job("resume-weights-only", 2, 2);
    auto run = [&](int rank) {
      auto net = lenet();
      const auto saved = core::load_safetensors(path + std::to_string(rank), net->context());
      for (const auto& [name, array] : saved.arrays) {
        if (name.rfind("param/", 0) == 0) net->parameters()[net->param_index(name.substr(6))].value.copy_from(array);
      }
      train::Trainer trainer(net, sgd(0.025), std::shared_ptr<kvstore::KVStore>(job.worker("dist_sync", rank)));
      const auto [images, labels] = batch(rank * 8, rank * 8 + 8);
      for (int step = 0; step < 2; ++step) trainer.train_batch(images, labels);
      return weights(*net);
    };
    return on_two_workers(run).first;
  }();
  EXPECT_NE(0, std::memcmp(weights_only.data(), uninterrupted.data(), resumed.size() * sizeof(float)));
  std::remove((path + "0").c_str());
  std::remove((path + "1").c_str());
}

}  // namespace
}  // namespace dt::ps

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
