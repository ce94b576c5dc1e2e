// What the "allreduce" kvstore tests share: arrays from values and back,
// exact integer inputs, and worker threads in a job without servers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/host/host_allreduce_kvstore.h"
#include "kvstore/kvstore_factory.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "optim/optimizer_config.h"
#include "ps/compression/compression_mode.h"
#include "ps/compression/error_feedback.h"
#include "ps/compression/gradient_codec.h"
#include "train/trainer.h"
#include "unit/ps/dist_device_job.h"

namespace dt::kvstore::host_allreduce_test {

using core::DType;
using core::NDArray;
using core::Shape;

inline std::shared_ptr<core::Context> cpu() { return core::make_cpu_context(); }

inline NDArray floats(const std::vector<float>& values) {
  NDArray a = NDArray::empty(cpu(), DType::kFloat32, Shape({static_cast<int64_t>(values.size())}));
  a.copy_from_host(values.data(), values.size() * sizeof(float));
  return a;
}

inline std::vector<float> values_of(const NDArray& a) {
  std::vector<float> out(a.size());
  a.copy_to_host(out.data(), out.size() * sizeof(float));
  return out;
}

// n small integers, different for each seed.
inline std::vector<float> integers(int seed, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((seed * 7 + static_cast<int>(i) * 3) % 23 - 11);
  return v;
}

// Runs body(rank) for every worker of a job without servers, on threads,
// and checks that every node of the job ended cleanly.
template <typename Body>
inline void run_workers(int workers, const Body& body, bool expect_clean_end = true) {
  test::ThreadedJob job(0, workers);
  std::vector<std::future<void>> threads;
  for (int rank = 0; rank < workers; ++rank) {
    threads.push_back(std::async(std::launch::async, [&job, &body, rank] { body(job, rank); }));
  }
  for (auto& t : threads) ASSERT_EQ(t.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "a worker hung";
  for (auto& t : threads) t.get();
  if (expect_clean_end) {
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }
}

}  // namespace dt::kvstore::host_allreduce_test
