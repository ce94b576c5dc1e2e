// The trainer's sync modes (SINGA DistOpt's full, half, partial and sparse
// steps) in 2-worker jobs whose scheduler and servers run on threads over
// inproc:// and whose workers are this test's threads: partial on
// "allreduce" and on "dist_sync" ends with the weights of a one-process
// simulation of the same arithmetic, bit for bit; half and sparse equal the
// same compression set on the store by hand; and every combination the
// modes refuse is a clear error.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../error_code_of.h"
#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/host/host_allreduce_kvstore.h"
#include "kvstore/kvstore_factory.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "ops/tensor_math.h"
#include "optim/optimizer_config.h"
#include "train/trainer.h"
#include "unit/ps/dist_device_job.h"

namespace dt::train {
namespace {

using core::DType;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using test_support::code_of;

constexpr int kSteps = 7;
constexpr int64_t kRows = 8;  // per worker and step

std::shared_ptr<core::Context> single_thread_cpu() {
  auto ctx = core::make_cpu_context();
  ctx->set_num_threads(1);  // results must not depend on how kernels split work
  return ctx;
}

// fc1.weight 320, fc1.bias 16, fc2.weight 192, fc2.bias 12, fc3.weight 48,
// fc3.bias 4 elements.
std::shared_ptr<nn::Net> mlp() {
  auto net = std::make_shared<nn::Net>(
      nn::build_model_description_from_text("mlp", R"({"input_shape": [20], "hidden": [16, 12], "classes": 4})"),
      single_thread_cpu());
  net->initialize(11);
  return net;
}

optim::OptimizerConfig sgd() {
  return optim::OptimizerConfig("sgd").set("learning_rate", 0.1).set("momentum", 0.9).set("wd", 1e-4);
}

// Worker `rank`'s batch of step `step`: different for every worker and step.
std::pair<NDArray, NDArray> batch(int rank, int step) {
  NDArray data = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({kRows, 20}));
  NDArray labels = NDArray::empty(core::make_cpu_context(), DType::kInt32, Shape({kRows}));
  float* x = data.data_as<float>();
  int32_t* y = labels.data_as<int32_t>();
  for (int64_t i = 0; i < kRows; ++i) {
    y[i] = static_cast<int32_t>((i + rank + step) % 4);
    for (int64_t j = 0; j < 20; ++j) {
      x[i * 20 + j] = std::sin(0.3f * float(j) + 1.7f * float(i) + 0.9f * float(rank) + 0.41f * float(step)) +
                      0.5f * float(y[i] == j % 4);
    }
  }
  return {data, labels};
}

std::map<std::string, std::vector<float>> weights(const nn::Net& net) {
  std::map<std::string, std::vector<float>> out;
  for (const nn::Parameter& p : net.parameters()) {
    std::vector<float> v(p.value.size());
    p.value.copy_to_host(v.data(), v.size() * sizeof(float));
    out[p.name] = v;
  }
  return out;
}

// The chunks of this net for a chunk size of 100, written out from SINGA's
// rule rather than computed (backward order: fc3.bias 4, fc3.weight 48,
// fc2.bias 12 gather to 64; fc2.weight 192 > 100 is alone; fc1.bias makes
// 80; fc1.weight 320 is alone; the chunk still open comes last).
const std::vector<std::vector<std::string>> kChunks = {
    {"fc2.weight"}, {"fc1.weight"}, {"fc3.bias", "fc3.weight", "fc2.bias", "fc1.bias"}};

// The partial update of two workers in one process, spelled out: each
// worker's net trains alone on its batches (a trainer without kvstore: the
// same local update), then the step's chunk is averaged as (w0 + w1) * 0.5,
// which is what the store computes (a sum of two floats does not depend on
// the order, and halving is exact).
std::vector<std::map<std::string, std::vector<float>>> simulated_partial() {
  std::vector<std::shared_ptr<nn::Net>> nets = {mlp(), mlp()};
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (auto& net : nets) trainers.push_back(std::make_unique<Trainer>(net, sgd(), nullptr));
  const auto param = [](nn::Net& net, const std::string& name) -> nn::Parameter& {
    for (nn::Parameter& p : net.parameters()) {
      if (p.name == name) return p;
    }
    throw std::runtime_error("no parameter " + name);
  };
  for (int step = 0; step < kSteps; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      const auto [x, y] = batch(rank, step);
      trainers[static_cast<size_t>(rank)]->train_batch(x, y);
    }
    for (const std::string& name : kChunks[static_cast<size_t>(step) % kChunks.size()]) {
      const NDArray w0 = param(*nets[0], name).value, w1 = param(*nets[1], name).value;
      NDArray sum = NDArray::empty(w0.context(), w0.dtype(), w0.shape());
      ops::add(sum, w0, w1);
      ops::scale(sum, 0.5);
      w0.copy_from(sum);
      w1.copy_from(sum);
    }
  }
  return {weights(*nets[0]), weights(*nets[1])};
}

// What make_store(job, rank) returns for each worker, trained kSteps with
// `sync` (and the store's compression set to `compression` first unless
// empty); each worker's final weights.
template <typename MakeStore>
std::vector<std::map<std::string, std::vector<float>>> train_job(int servers, const MakeStore& make_store,
                                                                 const SyncOptions& sync,
                                                                 const std::string& compression = "") {
  std::vector<std::map<std::string, std::vector<float>>> result(2);
  test::ThreadedJob job(servers, 2, test::fast_options(/*bigarray_bound_bytes=*/512));
  std::vector<std::future<void>> workers;
  for (int rank = 0; rank < 2; ++rank) {
    workers.push_back(std::async(std::launch::async, [&, rank] {
      std::shared_ptr<kvstore::KVStore> kv = make_store(job, rank);
      if (!compression.empty()) kv->set_gradient_compression(compression);
      auto net = mlp();
      TrainerOptions options;
      options.sync = sync;
      Trainer trainer(net, sgd(), kv, options);
      if (sync.mode != SyncMode::kFull) EXPECT_EQ(kv->gradient_compression(), sync.compression_spec());
      for (int step = 0; step < kSteps; ++step) {
        const auto [x, y] = batch(rank, step);
        trainer.train_batch(x, y);
      }
      result[static_cast<size_t>(rank)] = weights(*net);
    }));
  }
  for (auto& w : workers) EXPECT_EQ(w.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "hung";
  for (auto& w : workers) w.get();
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  return result;
}

std::shared_ptr<kvstore::KVStore> allreduce_store(const test::ThreadedJob& job, int rank) {
  return std::make_shared<kvstore::HostAllreduceKVStore>(job.worker(rank), job.options());
}

std::shared_ptr<kvstore::KVStore> dist_sync_store(const test::ThreadedJob& job, int rank) {
  return std::make_shared<kvstore::DistKVStore>("dist_sync", job.worker(rank), job.options());
}

SyncOptions partial_sync() {
  SyncOptions sync;
  sync.mode = SyncMode::kPartial;
  sync.partial_chunk_elements = 100;
  return sync;
}

TEST(TrainerSyncModes, PartialOnAllreduceIsTheSimulatedArithmeticBitForBit) {
  const auto expected = simulated_partial();
  // The simulation is not trivial: the workers' weights differ outside the
  // last step's chunk, and equal inside it.
  EXPECT_NE(expected[0].at("fc1.weight"), expected[1].at("fc1.weight"));
  EXPECT_EQ(expected[0].at(kChunks[(kSteps - 1) % kChunks.size()][0]),
            expected[1].at(kChunks[(kSteps - 1) % kChunks.size()][0]));
  const auto got = train_job(0, allreduce_store, partial_sync());
  EXPECT_EQ(got[0], expected[0]);
  EXPECT_EQ(got[1], expected[1]);
}

TEST(TrainerSyncModes, PartialOnDistSyncIsTheSimulatedArithmeticBitForBit) {
  // Two servers, fc1.weight (1280 bytes > 512) split across both.
  const auto expected = simulated_partial();
  const auto got = train_job(2, dist_sync_store, partial_sync());
  EXPECT_EQ(got[0], expected[0]);
  EXPECT_EQ(got[1], expected[1]);
}

TEST(TrainerSyncModes, AnotherChunkSizeGivesOtherWeights) {
  // The chunking is what the simulation fixes: one chunk of everything
  // averages every parameter every step, so the workers end equal.
  SyncOptions sync = partial_sync();
  sync.partial_chunk_elements = 100000;
  const auto got = train_job(0, allreduce_store, sync);
  EXPECT_EQ(got[0], got[1]);
  EXPECT_NE(got[0], simulated_partial()[0]);
}

TEST(TrainerSyncModes, HalfAndSparseEqualTheCompressionSetOnTheStore) {
  SyncOptions half;
  half.mode = SyncMode::kHalf;
  SyncOptions topk;
  topk.mode = SyncMode::kSparse;
  topk.sparse_topk = true;
  topk.sparse_value = 0.1;
  SyncOptions threshold;
  threshold.mode = SyncMode::kSparse;
  threshold.sparse_value = 0.2;
  threshold.sparse_accumulate = false;
  const auto full_dist = train_job(1, dist_sync_store, SyncOptions{});
  const auto full_allreduce = train_job(0, allreduce_store, SyncOptions{});
  for (const SyncOptions& sync : {half, topk, threshold}) {
    SCOPED_TRACE(sync.compression_spec());
    const auto by_mode = train_job(1, dist_sync_store, sync);
    const auto by_hand = train_job(1, dist_sync_store, SyncOptions{}, sync.compression_spec());
    EXPECT_EQ(by_mode, by_hand);
    EXPECT_EQ(by_mode[0], by_mode[1]) << "the workers of a reducing mode must agree";
    EXPECT_NE(by_mode[0], full_dist[0]) << "the compression changed nothing";
  }
  const auto by_mode = train_job(0, allreduce_store, topk);
  const auto by_hand = train_job(0, allreduce_store, SyncOptions{}, topk.compression_spec());
  EXPECT_EQ(by_mode, by_hand);
  EXPECT_NE(by_mode[0], full_allreduce[0]);
}

TEST(TrainerSyncModes, CombinationsTheModesRefuse) {
  SyncOptions half;
  half.mode = SyncMode::kHalf;
  TrainerOptions options;
  std::string message;
  // No store, or one that does not compress.
  options.sync = half;
  EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), nullptr, options); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kvstore::create_kvstore("local"), options); }, &message),
            ErrorCode::kNotSupported);
  EXPECT_NE(message.find("sync mode half"), std::string::npos) << message;
  options.sync = partial_sync();
  EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), nullptr, options); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kvstore::create_kvstore("local"), options); }, &message),
            ErrorCode::kNotSupported);
  EXPECT_NE(message.find("allreduce"), std::string::npos) << message;
  options.sync.partial_chunk_elements = 0;
  EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), nullptr, options); }), ErrorCode::kInvalidArgument);

  // dist_async servers make no round sums to average.
  {
    test::ThreadedJob job(1, 1);
    {
      auto kv = std::make_shared<kvstore::DistKVStore>("dist_async", job.worker(0), job.options());
      options.sync = partial_sync();
      EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kv, options); }, &message), ErrorCode::kNotSupported);
      EXPECT_NE(message.find("dist_async"), std::string::npos) << message;
    }
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }

  // One worker of a dist_sync job: the option checks against a real store.
  {
    test::ThreadedJob job(1, 1);
    {
      std::shared_ptr<kvstore::KVStore> kv = dist_sync_store(job, 0);
      options = TrainerOptions{};
      options.sync = partial_sync();
      options.update_on_kvstore = 1;
      EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kv, options); }, &message), ErrorCode::kInvalidArgument);
      EXPECT_NE(message.find("update_on_kvstore"), std::string::npos) << message;
      options.update_on_kvstore = 0;
      options.extra_contexts = {single_thread_cpu()};
      EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kv, options); }), ErrorCode::kNotSupported);
      options.extra_contexts.clear();
      options.update_on_kvstore = -1;
      Trainer trainer(mlp(), sgd(), kv, options);  // -1 picks the workers
      EXPECT_FALSE(trainer.update_on_kvstore());
      EXPECT_FALSE(trainer.overlaps_communication());
      // A compression set after the trainer would make the averaged weights
      // lossy: refused at the first step.
      kv->set_gradient_compression("fp16");
      const auto [x, y] = batch(0, 0);
      EXPECT_EQ(code_of([&] { trainer.train_batch(x, y); }, &message), ErrorCode::kInvalidArgument);
      EXPECT_NE(message.find("lossy"), std::string::npos) << message;
    }
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }

  // A job that goes on after a worker loss sums fewer workers than the
  // average divides by: partial is refused, on both kinds of store.
  {
    ps::PsOptions going_on = test::fast_options();
    going_on.worker_loss = ps::WorkerLossPolicy::kContinue;
    test::ThreadedJob job(0, 1, going_on);
    {
      std::shared_ptr<kvstore::KVStore> kv = allreduce_store(job, 0);
      EXPECT_TRUE(kv->elastic()->goes_on_after_worker_loss());
      options = TrainerOptions{};
      options.sync = partial_sync();
      EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kv, options); }, &message), ErrorCode::kNotSupported);
      EXPECT_NE(message.find("DT_WORKER_LOSS=continue"), std::string::npos) << message;
    }
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }
  {
    ps::PsOptions going_on = test::fast_options();
    going_on.worker_loss = ps::WorkerLossPolicy::kContinue;
    test::ThreadedJob job(1, 1, going_on);
    {
      std::shared_ptr<kvstore::KVStore> kv = dist_sync_store(job, 0);
      EXPECT_TRUE(kv->elastic()->goes_on_after_worker_loss());
      EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kv, options); }), ErrorCode::kNotSupported);
    }
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }

  // A store that compresses already (here "allreduce", whose compression
  // may change until the first push).
  test::ThreadedJob job(0, 1);
  {
    std::shared_ptr<kvstore::KVStore> kv = allreduce_store(job, 0);
    kv->set_gradient_compression("2bit:threshold=0.5");
    options = TrainerOptions{};
    options.sync = half;
    EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kv, options); }, &message), ErrorCode::kInvalidArgument);
    EXPECT_NE(message.find("2bit"), std::string::npos) << message;
    options.sync = partial_sync();
    EXPECT_EQ(code_of([&] { Trainer t(mlp(), sgd(), kv, options); }), ErrorCode::kInvalidArgument);
    // The very compression the mode sets is no conflict.
    kv->set_gradient_compression(half.compression_spec());
    options.sync = half;
    Trainer same(mlp(), sgd(), kv, options);
    EXPECT_EQ(kv->gradient_compression(), half.compression_spec());
  }
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

}  // namespace
}  // namespace dt::train
