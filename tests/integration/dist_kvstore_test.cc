// The data plane for real: scheduler, servers and workers as threads over
// inproc (this file) exchanging tensors through dist_sync / dist_async
// kvstores, with exactness against the local kvstore, failure propagation
// and malformed input. Every wait has a deadline.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "inproc_job.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/kvstore_factory.h"
#include "kvstore/local_kvstore.h"
#include "../error_code_of.h"
#include "lenet_exactness.h"
#include "ps/compression/error_feedback.h"
#include "ps/compression/gradient_codec.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "optim/optimizer.h"
#include "ps/key_placement.h"
#include "ps/scheduler/scheduler.h"
#include "ps/server/request_handler.h"
#include "ps/server/server_process.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"
#include "train/trainer.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using namespace std::chrono_literals;
using test::batch;
using test::lenet;
using test::sgd;
using test::single_thread_cpu;
using test::weights;
using test_support::code_of;

using test::inproc_job;

// LeNet's larger weights are split across both servers.
PsOptions fast_options() { return test::fast_options(4096); }

std::string inproc_url(const std::string& name) {
  return "inproc://dist-it-" + std::to_string(::getpid()) + "-" + name;
}

// A scheduler and servers on threads; the destructor waits for them (bounded).
class InprocJob {
 public:
  InprocJob(const std::string& name, int servers, int workers, PsOptions options = fast_options())
      : url_(inproc_url(name)), servers_(servers), workers_(workers), options_(options),
        scheduler_(inproc_job(url_, Role::kScheduler, servers, workers), options) {
    done_.push_back(std::async(std::launch::async, [this] { scheduler_.run(); }));
    for (int s = 0; s < servers; ++s) {
      done_.push_back(std::async(std::launch::async, [this] {
        run_server(inproc_job(url_, Role::kServer, servers_, workers_), options_);
      }));
    }
  }
  ~InprocJob() {
    for (auto& f : done_) f.wait_for(20s);
  }
  std::unique_ptr<kvstore::DistKVStore> worker(const std::string& type, int rank) const {
    return std::make_unique<kvstore::DistKVStore>(type, inproc_job(url_, Role::kWorker, servers_, workers_, rank),
                                                  options_);
  }
  // Every node's outcome: "" for a clean end, else the error text.
  std::vector<std::string> outcomes() {
    std::vector<std::string> out;
    for (auto& f : done_) {
      if (f.wait_for(20s) != std::future_status::ready) {
        out.push_back("hung");
        continue;
      }
      try {
        f.get();
        out.push_back("");
      } catch (const std::exception& e) {
        out.push_back(e.what());
      }
    }
    done_.clear();
    return out;
  }

 private:
  std::string url_;
  int servers_, workers_;
  PsOptions options_;
  Scheduler scheduler_;
  std::vector<std::future<void>> done_;
};

NDArray array(const std::vector<float>& v, Shape shape) {
  NDArray a = NDArray::empty(core::make_cpu_context(), DType::kFloat32, shape);
  a.copy_from_host(v.data(), v.size() * sizeof(float));
  return a;
}
NDArray array(const std::vector<float>& v) { return array(v, Shape({static_cast<int64_t>(v.size())})); }
std::vector<float> values(const NDArray& a) {
  std::vector<float> out(a.size());
  a.copy_to_host(out.data(), out.size() * sizeof(float));
  return out;
}

// run(0) and run(1) at once, as workers 0 and 1, each given `limit`; what
// each returned, as a pair, unless run returns nothing.
template <typename Run>
auto on_two_workers(Run run, std::chrono::seconds limit = 60s) {
  auto w0 = std::async(std::launch::async, run, 0);
  auto w1 = std::async(std::launch::async, run, 1);
  EXPECT_EQ(w0.wait_for(limit), std::future_status::ready);
  EXPECT_EQ(w1.wait_for(limit), std::future_status::ready);
  if constexpr (std::is_void_v<decltype(run(0))>) {
    w0.get();
    w1.get();
  } else {
    auto first = w0.get();
    return std::make_pair(std::move(first), w1.get());
  }
}

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

// ---- exactness: dist_sync LeNet == one process with two replicas ----------

constexpr int kSteps = 4;

std::vector<float> reference_weights() {
  auto net = lenet();
  train::TrainerOptions options;
  options.extra_contexts = {single_thread_cpu()};
  train::Trainer trainer(net, sgd(0.05), kvstore::create_kvstore("local"), options);
  const auto [images, labels] = batch(0, 16);
  for (int step = 0; step < kSteps; ++step) trainer.train_batch(images, labels);
  return weights(*net);
}

// Worker 0's weights after kSteps dist_sync steps of two workers in a fresh
// 2 x 2 job, each on its own 8 images; the workers must agree. An explicit
// options.overlap_communication is also checked to take effect.
std::vector<float> dist_weights(const std::string& name, const train::TrainerOptions& options = {}) {
  InprocJob job(name, 2, 2);
  const auto [a, b] = on_two_workers([&](int rank) {
    auto net = lenet();
    train::Trainer trainer(net, sgd(0.025), std::shared_ptr<kvstore::KVStore>(job.worker("dist_sync", rank)),
                           options);
    if (options.overlap_communication != -1) {
      EXPECT_EQ(trainer.overlaps_communication(), options.overlap_communication == 1);
    }
    const auto [images, labels] = batch(rank * 8, rank * 8 + 8);
    for (int step = 0; step < kSteps; ++step) trainer.train_batch(images, labels);
    return weights(*net);
  });
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "workers disagree";
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  return a;
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

// ---- gradient compression --------------------------------------------------

// Worker w's gradient of a key in a round: values on both sides of the
// thresholds the specs below use, different per worker, key and round.
std::vector<float> gradient(int worker, uint64_t key, int round, size_t n) {
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = std::sin(0.37f * float(i) + 1.3f * float(worker) + 0.71f * float(round) + float(key)) *
           (1.0f + 0.01f * float(i % 7));
  }
  return g;
}

// One process doing a 2-worker dist_sync job's arithmetic on one key part
// [begin, end) of n elements: per worker, the gradient plus its residual
// encoded and decoded; the server's rank-order sum; without an optimizer,
// that sum plus the server's residual encoded once per round and decoded by
// the workers (with one, the optimizer's update of the weights, pulled in
// full).
class SimulatedPart {
 public:
  SimulatedPart(const std::string& spec, uint64_t key, int64_t begin, int64_t end)
      : config_(ps::compression::CompressionConfig::parse(spec)), codec_(config_), key_(key), begin_(begin),
        n_(static_cast<size_t>(end - begin)) {}

  // Round `round`'s pushes of the key whose gradients gradient() gives
  // (this part's elements of them), summed in rank order.
  std::vector<float> pushed_sum(int round, size_t key_size) {
    std::vector<float> sum(n_, 0.0f);
    for (int w = 0; w < 2; ++w) {
      const std::vector<float> g = gradient(w, key_, round, key_size);
      std::vector<float> c(g.begin() + begin_, g.begin() + begin_ + static_cast<int64_t>(n_));
      const std::vector<float> decoded = round_trip(c, worker_feedback_[w]);
      // The server copies rank 0's value and adds rank 1's.
      for (size_t i = 0; i < n_; ++i) sum[i] = w == 0 ? decoded[i] : sum[i] + decoded[i];
    }
    return sum;
  }
  // What the workers pull of a round's sum (the server encodes it once).
  std::vector<float> pulled(std::vector<float> sum) { return round_trip(sum, server_feedback_); }

 private:
  // c compensated (when the mode has error feedback), encoded, the residual
  // updated, and what the receiver decodes.
  std::vector<float> round_trip(std::vector<float>& c, ps::compression::ErrorFeedback& feedback) const {
    if (config_.error_feedback) feedback.compensate(key_, begin_, c.data(), n_);
    std::vector<uint8_t> bytes(codec_.max_encoded_size(n_));
    bytes.resize(codec_.encode(c.data(), n_, bytes.data(), bytes.size()));
    if (config_.error_feedback) feedback.update(key_, begin_, c.data(), n_, codec_, bytes.data(), bytes.size());
    std::vector<float> decoded(n_, 0.0f);
    codec_.decode_add(bytes.data(), bytes.size(), decoded.data(), n_);
    return decoded;
  }

  ps::compression::CompressionConfig config_;
  ps::compression::GradientCodec codec_;
  uint64_t key_;
  int64_t begin_;
  size_t n_;
  ps::compression::ErrorFeedback worker_feedback_[2];
  ps::compression::ErrorFeedback server_feedback_;
};

// The keys of the compression tests, in init order: key 1 stays whole on one
// server, key 2 (12 KB > the 4 KB bound) is split across both, keys 3..6
// are small enough to travel fused with others.
const std::vector<std::pair<uint64_t, size_t>> kCompressedKeys = {{1, 1000}, {2, 3000}, {3, 10},
                                                                  {4, 24},   {5, 7},    {6, 40}};

// What every worker of a 2-worker, 2-server dist_sync job pulls after
// `rounds` rounds of pushing and pulling every key of kCompressedKeys, keys
// placed as the workers place them and each part simulated on its own.
std::map<uint64_t, std::vector<float>> simulated_pulls(const std::string& spec, int rounds) {
  KeyPlacement placement(2, fast_options().bigarray_bound_bytes);
  std::map<uint64_t, std::vector<float>> out;
  for (const auto& [key, size] : kCompressedKeys) {
    std::vector<float>& pulled = out[key];
    pulled.assign(size, 0.0f);
    for (const PartRange& part : placement.place(key, static_cast<int64_t>(size), sizeof(float))) {
      SimulatedPart sim(spec, key, part.begin, part.end);
      for (int round = 1; round <= rounds; ++round) {
        const std::vector<float> got = sim.pulled(sim.pushed_sum(round, size));
        std::copy(got.begin(), got.end(), pulled.begin() + part.begin);
      }
    }
  }
  return out;
}

// Workers 0 and 1 of `job` each push and pull every key of kCompressedKeys
// for `rounds` rounds (one call per round, so small keys share messages)
// and return what they pulled last. before_push(rank, round) runs first in
// each round.
std::pair<std::map<uint64_t, std::vector<float>>, std::map<uint64_t, std::vector<float>>> run_compressed(
    const InprocJob& job, const std::string& spec, int rounds, const std::function<void(int, int)>& before_push = {}) {
  return on_two_workers([&](int rank) {
    auto kv = job.worker("dist_sync", rank);
    std::vector<kvstore::Key> keys;
    std::vector<NDArray> outs;
    for (const auto& [key, size] : kCompressedKeys) {
      keys.push_back(key);
      outs.push_back(array(std::vector<float>(size, 0.0f)));
    }
    kv->init(keys, outs);
    kv->set_gradient_compression(spec);
    for (int round = 1; round <= rounds; ++round) {
      if (before_push) before_push(rank, round);
      std::vector<NDArray> grads;
      for (const auto& [key, size] : kCompressedKeys) grads.push_back(array(gradient(rank, key, round, size)));
      kv->push(keys, grads, 0);
      kv->pull(keys, outs, 0);
    }
    std::map<uint64_t, std::vector<float>> pulled;
    for (size_t i = 0; i < keys.size(); ++i) pulled[keys[i]] = values(outs[i]);
    return pulled;
  });
}

TEST(PsDataInproc, CompressedPushesAndPullsEqualTheSimulatedArithmeticForEveryMode) {
  // The workers run the optimizer (no set_optimizer): each round's sum comes
  // back encoded by its server, with the server's own residual.
  constexpr int kRounds = 3;
  for (const std::string spec :
       {"fp16", "fp16:error_feedback=off", "bf16", "2bit:threshold=0.5", "2bit:threshold=0.5,error_feedback=off",
        "1bit:threshold=0.25", "threshold:threshold=0.8", "topk:fraction=0.05",
        "topk:fraction=0.05,error_feedback=off"}) {
    SCOPED_TRACE(spec);
    InprocJob job("compress-" + std::to_string(std::hash<std::string>()(spec)), 2, 2);
    const auto [a, b] = run_compressed(job, spec, kRounds);
    const auto expected = simulated_pulls(spec, kRounds);
    for (const auto& [key, size] : kCompressedKeys) EXPECT_EQ(a.at(key), expected.at(key)) << "key " << key;
    EXPECT_EQ(a, b) << "the workers pulled different values";
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }
}

TEST(PsDataInproc, CompressedPullsThatAreResentStayExact) {
  // PS_RESEND with a 10 ms patience, and worker 1 50 ms late to every
  // round: worker 0's pulls wait and are sent again, several times a
  // round; each copy gets the round's one encoding, never a second
  // residual update.
  PsOptions options = fast_options();
  options.resend_timeout_s = 0.01;
  const std::string spec = "2bit:threshold=0.5";
  InprocJob job("compress-resend", 2, 2, options);
  const auto [a, b] = run_compressed(job, spec, 3, [](int rank, int) {
    if (rank == 1) std::this_thread::sleep_for(50ms);
  });
  const auto expected = simulated_pulls(spec, 3);
  for (const auto& [key, size] : kCompressedKeys) EXPECT_EQ(a.at(key), expected.at(key)) << "key " << key;
  EXPECT_EQ(a, b);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, WithTheOptimizerOnTheServersPulledWeightsAreExact) {
  // Pushes compressed, the servers' SGD applied to their rank-order sum,
  // and the weights pulled in full: the same as one process doing it.
  const std::string spec = "2bit:threshold=0.5";
  const auto sgd_config = optim::OptimizerConfig("sgd").set("learning_rate", 0.1).set("wd", 0.0);
  constexpr size_t kCount = 3000;  // split across both servers
  constexpr int kRounds = 3;
  InprocJob job("compress-weights", 2, 2);
  const auto [a, b] = on_two_workers([&](int rank) {
    auto kv = job.worker("dist_sync", rank);
    kv->init({2}, {array(std::vector<float>(kCount, 1.0f))});
    kv->set_gradient_compression(spec);
    kv->set_optimizer(sgd_config);
    NDArray out = array(std::vector<float>(kCount, 0.0f));
    const core::Traffic before = kv->traffic();
    for (int round = 1; round <= kRounds; ++round) {
      kv->push({2}, {array(gradient(rank, 2, round, kCount))}, 0);
      kv->pull({2}, {out}, 0);
    }
    const core::Traffic t = kv->traffic() - before;
    EXPECT_GT(t.bytes_received, kRounds * kCount * sizeof(float)) << "weights are pulled in full";
    return values(out);
  });
  NDArray weight = array(std::vector<float>(kCount, 1.0f));
  auto optimizer = optim::Optimizer::create(sgd_config);
  KeyPlacement placement(2, fast_options().bigarray_bound_bytes);
  std::vector<std::unique_ptr<SimulatedPart>> parts;
  for (const PartRange& part : placement.place(2, kCount, sizeof(float))) {
    parts.push_back(std::make_unique<SimulatedPart>(spec, 2, part.begin, part.end));
  }
  ASSERT_EQ(parts.size(), 2u);
  for (int round = 1; round <= kRounds; ++round) {
    std::vector<float> sum;
    for (const auto& part : parts) {
      const std::vector<float> s = part->pushed_sum(round, kCount);
      sum.insert(sum.end(), s.begin(), s.end());
    }
    optimizer->update(2, weight, array(sum));
  }
  EXPECT_EQ(a, values(weight));
  EXPECT_EQ(a, b);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, TrafficCountsTheBytesCompressionSaves) {
  // 100000 float32 (400 KB) pushed 3 times and pulled once by one worker
  // that runs the optimizer itself: what it sends and what it receives
  // shrink about 2x with fp16 and about 16x with 2bit.
  constexpr size_t kCount = 100000;
  std::map<std::string, core::Traffic> seen;
  for (const std::string spec : {"none", "fp16", "2bit:threshold=0.5"}) {
    InprocJob job("traffic-" + std::to_string(std::hash<std::string>()(spec)), 1, 1);
    {
      auto kv = job.worker("dist_sync", 0);
      EXPECT_EQ(kv->traffic().bytes_sent, 0u);
      kv->init({1}, {array(std::vector<float>(kCount, 0.0f))});
      kv->set_gradient_compression(spec);
      const core::Traffic before = kv->traffic();
      for (int round = 1; round <= 3; ++round) kv->push({1}, {array(gradient(0, 1, round, kCount))}, 0);
      NDArray out = array(std::vector<float>(kCount, 0.0f));
      kv->pull({1}, {out}, 0);
      seen[spec] = kv->traffic() - before;
    }
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }
  const core::Traffic none = seen["none"], fp16 = seen["fp16"], twobit = seen["2bit:threshold=0.5"];
  EXPECT_GT(none.bytes_sent, 3 * kCount * sizeof(float));
  EXPECT_LT(none.bytes_sent, 3 * kCount * sizeof(float) + 64 * 1024);
  EXPECT_GT(none.bytes_received, kCount * sizeof(float));
  EXPECT_LT(none.bytes_received, kCount * sizeof(float) + 64 * 1024);
  EXPECT_NEAR(static_cast<double>(fp16.bytes_sent) / none.bytes_sent, 0.5, 0.02);
  EXPECT_LT(static_cast<double>(twobit.bytes_sent) / none.bytes_sent, 1.0 / 14);
  EXPECT_NEAR(static_cast<double>(fp16.bytes_received) / none.bytes_received, 0.5, 0.02);
  EXPECT_LT(static_cast<double>(twobit.bytes_received) / none.bytes_received, 1.0 / 14);
  EXPECT_EQ(kvstore::create_kvstore("local")->traffic().bytes_sent, 0u);
}

TEST(PsDataInproc, CompressionMustBeTheSameOnEveryWorkerAndSetBeforePushing) {
  InprocJob job("compress-rules", 1, 2);
  const auto [a, b] = on_two_workers([&](int rank) {
    auto kv = job.worker("dist_sync", rank);
    kv->init({1}, {array({0, 0})});
    // One of the two calls succeeds: no code_of here.
    std::optional<ErrorCode> mismatch;
    try {
      kv->set_gradient_compression(rank == 0 ? "2bit:threshold=0.5" : "fp16");
    } catch (const Error& e) {
      mismatch = e.code();
    }
    kv->barrier();
    kv->push({1}, {array({1, 1})}, 0);
    const ErrorCode late = code_of([&] { kv->set_gradient_compression("fp16"); });
    return std::make_pair(mismatch, late);
  });
  // Whichever worker came second was refused; setting after a push never works.
  EXPECT_NE(a.first.has_value(), b.first.has_value()) << "exactly one worker must be refused";
  EXPECT_EQ(a.first.value_or(b.first.value_or(ErrorCode::kInternal)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.second, ErrorCode::kBadState);
  EXPECT_EQ(b.second, ErrorCode::kBadState);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  EXPECT_EQ(code_of([] { kvstore::create_kvstore("local")->set_gradient_compression("2bit"); }),
            ErrorCode::kNotSupported);
}

TEST(PsDataInproc, AsyncTrainingRefusesUpdatesOnTheWorkers) {
  InprocJob job("async-rule", 1, 1);
  {
    std::shared_ptr<kvstore::KVStore> kv(job.worker("dist_async", 0));
    train::TrainerOptions options;
    options.update_on_kvstore = 0;
    try {
      train::Trainer trainer(lenet(), sgd(0.05), kv, options);
      FAIL() << "dist_async with the update on the workers was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("async mode"), std::string::npos) << e.what();
    }
    // The default puts the update on the servers.
    train::Trainer trainer(lenet(), sgd(0.05), kv);
    EXPECT_TRUE(trainer.update_on_kvstore());
  }
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, WorkerLeavingMidRoundFailsTheOtherWithPeerLost) {
  InprocJob job("lost", 1, 2);
  std::promise<void> initialized;
  auto survivor = std::async(std::launch::async, [&] {
    auto kv = job.worker("dist_sync", 0);
    kv->init({1}, {array({0})});
    initialized.set_value();
    NDArray out = array({0});
    const auto start = std::chrono::steady_clock::now();
    try {
      // Worker 1 never pushes round 1: the pull waits until it is lost.
      kv->pushpull({1}, {array({1})}, {out}, 0);
      ADD_FAILURE() << "the round completed without worker 1";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
      EXPECT_NE(std::string(e.what()).find("worker 1"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  });
  {
    // Worker 1 joins and, once worker 0 has initialised the key, vanishes
    // without saying goodbye: its heartbeats stop as a crashed process's
    // would.
    JobConfig job1 = inproc_job(inproc_url("lost"), Role::kWorker, 1, 2, 1);
    ClusterMember member(job1, fast_options());
    ASSERT_EQ(initialized.get_future().wait_for(20s), std::future_status::ready);
  }
  ASSERT_EQ(survivor.wait_for(20s), std::future_status::ready);
  survivor.get();
  for (const auto& outcome : job.outcomes()) EXPECT_NE(outcome.find("worker 1"), std::string::npos) << outcome;
}

TEST(PsDataInproc, MalformedRequestsAreRejectedAndTheServerKeepsServing) {
  ServerRequestHandler server(1);
  const std::string url = inproc_url("malformed");
  RequestServer transport({url}, 4, [&](Message m, RequestServer::Reply r) { server.handle(std::move(m), r); },
                          kDefaultMaxMessageBytes);
  RequestClient client(url, 5s);
  auto status_of = [&](Message request) {
    Frame reply = Frame::parse(client.call(std::move(request), 5s));
    return reply.expect<wire::DataReply>().status();
  };
  auto raw = [](const std::vector<uint8_t>& bytes) {
    Message m = Message::with_capacity(bytes.size());
    if (!bytes.empty()) std::memcpy(m.grow(bytes.size()), bytes.data(), bytes.size());
    return m;
  };
  const int protocol = static_cast<int>(ErrorCode::kProtocol);
  EXPECT_EQ(status_of(raw({})), protocol);
  EXPECT_EQ(status_of(raw({0xff, 0xff, 0xff, 0x7f, 1, 2, 3})), protocol);
  // A valid init, then the same frame truncated and with a slice pointing
  // outside its payload.
  const PartInfo info{PartKey{1, 0, 2}, DType::kFloat32, Shape({2})};
  EncodedData init = encode_data_request(wire::DataOp::Init, 0, {SliceSpec{info, -1, 8}}, "dist_sync");
  const float value[2] = {4, 5};
  std::memcpy(init.slice_data[0], value, sizeof value);
  std::vector<uint8_t> bytes(init.message.data(), init.message.data() + init.message.size());
  EXPECT_EQ(status_of(raw(std::vector<uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2))), protocol);
  EXPECT_EQ(status_of(raw(std::vector<uint8_t>(bytes.begin(), bytes.end() - 4))), protocol);
  // A part outside its tensor.
  const PartInfo outside{PartKey{1, 0, 3}, DType::kFloat32, Shape({2})};
  EXPECT_EQ(status_of(encode_data_request(wire::DataOp::Pull, 0, {SliceSpec{outside, 0, 0}}).message), protocol);
  EXPECT_EQ(status_of(std::move(init.message)), 0);
  EncodedData pull = encode_data_request(wire::DataOp::Pull, 0, {SliceSpec{info, 0, 0}});
  Frame reply = Frame::parse(client.call(std::move(pull.message), 5s));
  const auto& data = reply.expect<wire::DataReply>();
  ASSERT_EQ(data.status(), 0);
  const DecodedSlice slice = decode_slice(reply, data.slices()->Get(0));
  float got[2];
  std::memcpy(got, slice.data, sizeof got);
  EXPECT_EQ(got[0], 4.0f);
  EXPECT_EQ(got[1], 5.0f);
}

// ---- asynchronous requests: priorities, overlap, errors ------------------

// The keys of a data request's slices, in message order.
std::vector<uint64_t> slice_keys(const Frame& frame) {
  std::vector<uint64_t> keys;
  const auto* data = frame.body<wire::DataRequest>();
  if (data == nullptr || data->slices() == nullptr) return keys;
  for (const auto* slice : *data->slices()) keys.push_back(slice->key());
  return keys;
}

// A scheduler and one server on threads; the server shows every request to
// observe (on a handler thread, before the real ServerRequestHandler handles it)
// and keeps serving until the job ends. observe may block to hold a request.
class ObservedJob {
 public:
  using Observe = std::function<void(const Frame&)>;
  ObservedJob(const std::string& name, int workers, Observe observe)
      : url_(inproc_url(name)), workers_(workers),
        scheduler_(inproc_job(url_, Role::kScheduler, 1, workers), fast_options()) {
    done_.push_back(std::async(std::launch::async, [this] { scheduler_.run(); }));
    done_.push_back(std::async(std::launch::async, [this, observe] {
      ServerRequestHandler server(workers_);
      RequestServer transport(
          {url_ + "-server"}, server_receivers(workers_),
          [&server, observe](Message request, RequestServer::Reply reply) {
            Message copy = request.copy();
            try {
              observe(Frame::parse(std::move(request)));
            } catch (const Error&) {
              // Malformed: the ServerRequestHandler answers it.
            }
            server.handle(std::move(copy), reply);
          },
          kDefaultMaxMessageBytes);
      ClusterMember member(inproc_job(url_, Role::kServer, 1, workers_), fast_options(), transport.bound_urls());
      member.on_lost([&server](const LostNode& lost) { server.fail(Error(ErrorCode::kPeerLost, lost.message())); });
      member.wait_for_stop();
      member.shutdown();
    }));
  }
  ~ObservedJob() {
    for (auto& f : done_) f.wait_for(20s);
  }
  std::unique_ptr<kvstore::DistKVStore> worker(const std::string& type, int rank, int window = 0) const {
    return std::make_unique<kvstore::DistKVStore>(type, inproc_job(url_, Role::kWorker, 1, workers_, rank),
                                                  fast_options(), DataTransport::kAuto, window);
  }
  void expect_clean_end() {
    for (auto& f : done_) {
      ASSERT_EQ(f.wait_for(20s), std::future_status::ready) << "a node hung";
      EXPECT_NO_THROW(f.get());
    }
    done_.clear();
  }

 private:
  std::string url_;
  int workers_;
  Scheduler scheduler_;
  std::vector<std::future<void>> done_;
};

// A dist_sync pushpull leaves as one PushPull message when nothing is queued
// for its server, otherwise as a Push and a Pull.
bool carries_gradients(wire::DataOp op) { return op == wire::DataOp::Push || op == wire::DataOp::PushPull; }

TEST(PsAsyncInproc, PushpullIsOneMessageUnlessItsServerHasAQueue) {
  std::mutex mutex;
  std::vector<std::pair<wire::DataOp, uint64_t>> arrived;  // op, first key
  std::promise<void> gate_arrived, open_gate;
  std::shared_future<void> gate = open_gate.get_future().share();
  ObservedJob job("fused-pushpull", 1, [&](const Frame& frame) {
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || data->op() == wire::DataOp::Init) return;
    const auto keys = slice_keys(frame);
    {
      std::lock_guard<std::mutex> lock(mutex);
      arrived.emplace_back(data->op(), keys.front());
    }
    if (keys.front() == 100) {
      gate_arrived.set_value();
      gate.wait_for(10s);
    }
  });
  auto kv = job.worker("dist_sync", 0, /*window=*/1);
  kv->init({1, 100}, {array({0, 0}), array({0})});
  NDArray g = array({2, 3}), out = array({0, 0});
  // Nothing queued: one message, push and pull together.
  kv->pushpull({1}, {g}, {out}, 0);
  EXPECT_EQ(values(out), (std::vector<float>{2, 3}));
  // Held on the server, key 100's pushpull fills the window of one; key 1's
  // pushpull then leaves as a push (at once) and a pull (queued until the
  // window frees).
  NDArray held_out = array({0});
  auto held = kv->pushpull_async({100}, {array({1})}, {held_out}, 0);
  ASSERT_EQ(gate_arrived.get_future().wait_for(10s), std::future_status::ready);
  NDArray g2 = array({4, 5});
  out = array({0, 0});
  auto queued = kv->pushpull_async({1}, {g2}, {out}, 0);
  const auto arrivals = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return arrived.size();
  };
  for (int i = 0; i < 500 && arrivals() < 3; ++i) std::this_thread::sleep_for(10ms);  // the push
  EXPECT_FALSE(queued->done()) << "its pull cannot have left";
  open_gate.set_value();
  kv->wait_all();
  EXPECT_EQ(values(out), (std::vector<float>{4, 5}));
  EXPECT_EQ(values(held_out), (std::vector<float>{1}));
  std::lock_guard<std::mutex> lock(mutex);
  const std::vector<std::pair<wire::DataOp, uint64_t>> expected = {{wire::DataOp::PushPull, 1},
                                                                   {wire::DataOp::PushPull, 100},
                                                                   {wire::DataOp::Push, 1},
                                                                   {wire::DataOp::Pull, 1}};
  EXPECT_EQ(arrived, expected);
}

TEST(PsAsyncInproc, QueuedRequestsLeaveInPriorityOrderFused) {
  std::mutex mutex;
  std::vector<uint64_t> arrived;  // slice keys of pushes, in arrival order
  std::promise<void> gate_arrived, open_gate;
  std::shared_future<void> gate = open_gate.get_future().share();
  ObservedJob job("priority", 1, [&](const Frame& frame) {
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || data->op() != wire::DataOp::Push) return;
    const auto keys = slice_keys(frame);
    {
      std::lock_guard<std::mutex> lock(mutex);
      arrived.insert(arrived.end(), keys.begin(), keys.end());
    }
    if (keys == std::vector<uint64_t>{100}) {
      // Hold the first push: with a window of one, everything after it queues.
      gate_arrived.set_value();
      gate.wait_for(10s);
    }
  });
  auto kv = job.worker("dist_async", 0, /*window=*/1);
  ASSERT_EQ(kv->max_in_flight_per_server(), 1);
  const std::vector<uint64_t> keys = {1, 2, 3, 4, 5, 6};
  const std::vector<int> priorities = {-5, 3, 0, 7, -1, 2};
  kv->init({100}, {array({0})});
  for (uint64_t key : keys) kv->init({key}, {array({0, 0})});
  auto held = kv->push_async({100}, {array({1})}, 0);
  ASSERT_EQ(gate_arrived.get_future().wait_for(10s), std::future_status::ready);
  std::vector<NDArray> grads;
  std::vector<std::shared_ptr<kvstore::Completion>> requests;
  for (size_t i = 0; i < keys.size(); ++i) {
    grads.push_back(array({float(i), 1}));
    requests.push_back(kv->push_async({keys[i]}, {grads.back()}, priorities[i]));
  }
  for (const auto& r : requests) EXPECT_FALSE(r->done()) << "sent past a full window";
  open_gate.set_value();
  kv->wait_all();
  for (const auto& r : requests) EXPECT_TRUE(r->done());
  {
    std::lock_guard<std::mutex> lock(mutex);
    // Larger priority first: 7, 3, 2, 0, -1, -5.
    EXPECT_EQ(arrived, (std::vector<uint64_t>{100, 4, 2, 6, 3, 5, 1}));
  }
  NDArray out = array({0, 0});
  kv->pull({3}, {out}, 0);
  EXPECT_EQ(values(out), (std::vector<float>{2, 1})) << "the async push was applied";
  kv.reset();
  job.expect_clean_end();
}

TEST(PsAsyncInproc, WorkersIssuingKeysInOppositeOrdersDoNotWaitForEachOther) {
  // One message in flight per lane. Each worker's first pushpull leaves as
  // one message; had the second been one message too, queued behind the
  // first, worker 0's pushpull of key 1 would wait for worker 1's push of
  // key 1, queued behind worker 1's pushpull of key 2, which waits for
  // worker 0's push of key 2, queued behind worker 0's pushpull of key 1.
  InprocJob job("opposite", 1, 2);
  auto run = [&](int rank) {
    auto kv = std::make_unique<kvstore::DistKVStore>(
        "dist_sync", inproc_job(inproc_url("opposite"), Role::kWorker, 1, 2, rank), fast_options(),
        DataTransport::kAuto, 1);
    kv->init({1, 2}, {array({0}), array({0})});
    NDArray g1 = array({float(rank + 1)}), g2 = array({float(10 * (rank + 1))});
    NDArray o1 = array({0}), o2 = array({0});
    for (int step = 0; step < 5; ++step) {
      const std::vector<uint64_t> order = rank == 0 ? std::vector<uint64_t>{1, 2} : std::vector<uint64_t>{2, 1};
      for (uint64_t key : order) {
        if (key == 1) kv->pushpull_async({1}, {g1}, {o1}, 0);
        if (key == 2) kv->pushpull_async({2}, {g2}, {o2}, 0);
      }
      kv->wait_all();
      EXPECT_EQ(values(o1), std::vector<float>{3});
      EXPECT_EQ(values(o2), std::vector<float>{30});
    }
  };
  on_two_workers(run, 30s);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsAsyncInproc, TrainerSendsTheLastLayerFirstBeforeBackwardEnds) {
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::vector<std::pair<Clock::time_point, uint64_t>> pushes;  // arrival, first key
  ObservedJob job("overlap", 1, [&](const Frame& frame) {
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || !carries_gradients(data->op())) return;
    std::lock_guard<std::mutex> lock(mutex);
    pushes.emplace_back(Clock::now(), slice_keys(frame).front());
  });
  auto net = lenet();
  const auto layer_of = [&](size_t index) {
    const std::string& name = net->parameters()[index].name;
    return name.substr(0, name.find('.'));
  };
  const std::string last_layer = layer_of(net->parameters().size() - 1);
  // A big batch makes backward long enough to see into.
  train::TrainerOptions options;
  options.update_on_kvstore = 0;
  train::Trainer trainer(net, sgd(0.01), std::shared_ptr<kvstore::KVStore>(job.worker("dist_sync", 0)), options);
  ASSERT_TRUE(trainer.overlaps_communication());
  const auto [images, labels] = batch(0, 128);
  trainer.train_batch(images, labels);  // initialises the store, synchronously
  {
    std::lock_guard<std::mutex> lock(mutex);
    pushes.clear();
  }
  const auto before = Clock::now();
  const double compute_before = trainer.compute_seconds();
  trainer.train_batch(images, labels);
  // Forward and backward started after `before` and lasted this long.
  const auto backward_end_bound =
      before + std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(trainer.compute_seconds() - compute_before));
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_FALSE(pushes.empty());
  EXPECT_EQ(layer_of(pushes.front().second), last_layer) << "the last layer's gradients are ready first";
  EXPECT_LT(pushes.front().first, backward_end_bound)
      << "the first push reached the server "
      << std::chrono::duration<double, std::milli>(pushes.front().first - backward_end_bound).count()
      << " ms after backward ended";
}

TEST(PsAsyncInproc, WithoutOverlapNothingLeavesBeforeBackwardEnds) {
  // The control for the test above: the same measurement must fail it.
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::vector<Clock::time_point> pushes;
  ObservedJob job("no-overlap", 1, [&](const Frame& frame) {
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || !carries_gradients(data->op())) return;
    std::lock_guard<std::mutex> lock(mutex);
    pushes.push_back(Clock::now());
  });
  train::TrainerOptions options;
  options.update_on_kvstore = 0;
  options.overlap_communication = 0;
  train::Trainer trainer(lenet(), sgd(0.01), std::shared_ptr<kvstore::KVStore>(job.worker("dist_sync", 0)), options);
  ASSERT_FALSE(trainer.overlaps_communication());
  const auto [images, labels] = batch(0, 128);
  trainer.train_batch(images, labels);
  {
    std::lock_guard<std::mutex> lock(mutex);
    pushes.clear();
  }
  const auto before = Clock::now();
  const double compute_before = trainer.compute_seconds();
  trainer.train_batch(images, labels);
  const auto compute_end = before + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                        trainer.compute_seconds() - compute_before));
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_FALSE(pushes.empty());
  EXPECT_GT(pushes.front(), compute_end);
}

std::vector<float> overlap_weights(const std::string& name, int update_on_kvstore, int overlap) {
  train::TrainerOptions options;
  options.update_on_kvstore = update_on_kvstore;
  options.overlap_communication = overlap;
  return dist_weights(name, options);
}

TEST(PsAsyncInproc, OverlappedTrainingIsBitIdenticalToSynchronousAndToLocal) {
  const auto expected = reference_weights();
  for (int update_on_kvstore : {0, 1}) {
    SCOPED_TRACE("update_on_kvstore " + std::to_string(update_on_kvstore));
    const auto overlapped = overlap_weights("ov-" + std::to_string(update_on_kvstore), update_on_kvstore, 1);
    const auto synchronous = overlap_weights("sy-" + std::to_string(update_on_kvstore), update_on_kvstore, 0);
    ASSERT_EQ(overlapped.size(), expected.size());
    EXPECT_EQ(0, std::memcmp(overlapped.data(), synchronous.data(), expected.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(overlapped.data(), expected.data(), expected.size() * sizeof(float)));
  }
}

TEST(PsAsyncInproc, AServerErrorReachesTheWaitAndOtherwiseTheNextCall) {
  ObservedJob job("errors", 1, [](const Frame&) {});
  auto kv = job.worker("dist_async", 0);
  NDArray ints = NDArray::zeros(core::make_cpu_context(), DType::kInt32, Shape({4}));
  kv->init({1, 2}, {ints, array({0, 0})});
  // The server refuses to sum an integer key.
  auto refused = kv->push_async({1}, {ints}, 0);
  try {
    kv->wait(refused);
    ADD_FAILURE() << "the wait succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported) << e.what();
  }
  EXPECT_NO_THROW(kv->push({2}, {array({1, 1})}, 0)) << "a reported error is not reported again";
  // Nobody waits for this one: the next call reports it, once.
  auto unwaited = kv->push_async({1}, {ints}, 0);
  for (auto end = std::chrono::steady_clock::now() + 10s; !unwaited->done() && std::chrono::steady_clock::now() < end;) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(unwaited->done());
  NDArray out = array({0, 0});
  try {
    kv->pull({2}, {out}, 0);
    ADD_FAILURE() << "the earlier failure went unreported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported) << e.what();
  }
  kv->pull({2}, {out}, 0);
  EXPECT_EQ(values(out), (std::vector<float>{1, 1}));
  kv.reset();
  job.expect_clean_end();
}

TEST(PsAsyncInproc, AServerLostMidRequestFailsTheWaitWithPeerLost) {
  const std::string url = inproc_url("server-lost");
  Scheduler scheduler(inproc_job(url, Role::kScheduler, 1, 1), fast_options());
  auto scheduler_done = std::async(std::launch::async, [&] { scheduler.run(); });
  std::promise<void> die, release, swallowed;
  std::shared_future<void> die_f = die.get_future().share(), release_f = release.get_future().share();
  std::once_flag first_swallowed;
  auto server_done = std::async(std::launch::async, [&] {
    ServerRequestHandler server(1);
    // Answers init; swallows pushes (their replies never leave), as a server
    // that hangs or dies mid-request would.
    RequestServer transport(
        {url + "-server"}, server_receivers(1),
        [&](Message request, RequestServer::Reply reply) {
          Message copy = request.copy();
          const Frame frame = Frame::parse(std::move(request));
          const auto* data = frame.body<wire::DataRequest>();
          if (data != nullptr && carries_gradients(data->op())) {
            std::call_once(first_swallowed, [&] { swallowed.set_value(); });
            return;
          }
          server.handle(std::move(copy), reply);
        },
        kDefaultMaxMessageBytes);
    auto member = std::make_unique<ClusterMember>(inproc_job(url, Role::kServer, 1, 1), fast_options(),
                                                  transport.bound_urls());
    die_f.wait_for(20s);
    member.reset();  // heartbeats stop: to the scheduler this server is dead
    release_f.wait_for(20s);
  });
  {
    auto kv = std::make_unique<kvstore::DistKVStore>("dist_sync", inproc_job(url, Role::kWorker, 1, 1, 0),
                                                     fast_options());
    kv->init({1}, {array({1, 2})});
    NDArray g = array({1, 1}), out = array({0, 0});
    auto pending = kv->pushpull_async({1}, {g}, {out}, 0);
    ASSERT_EQ(swallowed.get_future().wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(pending->done());
    const auto start = std::chrono::steady_clock::now();
    die.set_value();
    try {
      kv->wait(pending);
      ADD_FAILURE() << "the wait succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
      EXPECT_NE(std::string(e.what()).find("server 0"), std::string::npos) << e.what();
    }
    // Heartbeat timeout 1 s (request timeout 10 s): the loss, not the deadline, ended it.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s + 500ms);
    try {
      kv->push({1}, {g}, 0);
      ADD_FAILURE() << "a call after the loss succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
    }
    EXPECT_EQ(values(out), (std::vector<float>{0, 0})) << "nothing was written";
  }
  release.set_value();
  ASSERT_EQ(server_done.wait_for(20s), std::future_status::ready);
  ASSERT_EQ(scheduler_done.wait_for(20s), std::future_status::ready);
  EXPECT_THROW(scheduler_done.get(), Error);
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
