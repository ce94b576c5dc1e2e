// The in-process distributed kvstore job shared by the dist_kvstore tests:
// a scheduler and servers on threads (InprocJob), array helpers, the LeNet
// exactness runs and the per-worker gradients. Every wait has a deadline.
#pragma once

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
#include "../inproc_job.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/kvstore_factory.h"
#include "kvstore/local_kvstore.h"
#include "../../error_code_of.h"
#include "../lenet_exactness.h"
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

namespace dt::ps::dist_kvstore_test {

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
inline PsOptions fast_options() { return test::fast_options(4096); }

inline std::string inproc_url(const std::string& name) {
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

inline NDArray array(const std::vector<float>& v, Shape shape) {
  NDArray a = NDArray::empty(core::make_cpu_context(), DType::kFloat32, shape);
  a.copy_from_host(v.data(), v.size() * sizeof(float));
  return a;
}
inline NDArray array(const std::vector<float>& v) { return array(v, Shape({static_cast<int64_t>(v.size())})); }
inline std::vector<float> values(const NDArray& a) {
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

inline constexpr int kSteps = 4;

inline std::vector<float> reference_weights() {
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
inline std::vector<float> dist_weights(const std::string& name, const train::TrainerOptions& options = {}) {
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

// Worker w's gradient of a key in a round: values on both sides of the
// thresholds the specs below use, different per worker, key and round.
inline std::vector<float> gradient(int worker, uint64_t key, int round, size_t n) {
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = std::sin(0.37f * float(i) + 1.3f * float(worker) + 0.71f * float(round) + float(key)) *
           (1.0f + 0.01f * float(i % 7));
  }
  return g;
}

}  // namespace dt::ps::dist_kvstore_test
