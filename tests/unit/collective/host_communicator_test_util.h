// What the HostCommunicator tests share: ranks as threads meeting through an
// in-process all-gather, their outcomes, and a fixture that makes the
// communicators over ipc:// or tcp:// loopback.
#pragma once

#include "collective/host/host_communicator.h"

#include <gtest/gtest.h>
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace dt::collective::host::host_communicator_test {

using core::DType;
using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;
using Comms = std::vector<std::unique_ptr<HostCommunicator>>;

// The rendezvous: every rank's blob once all n published, or kTimedOut.
class InProcessExchange {
 public:
  explicit InProcessExchange(int n) : blobs_(static_cast<size_t>(n)) {}
  Exchange for_rank(int rank) {
    return [this, rank](const std::vector<uint8_t>& mine) {
      std::unique_lock<std::mutex> lock(mu_);
      blobs_[static_cast<size_t>(rank)] = mine;
      ++arrived_;
      cv_.notify_all();
      if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return arrived_ == static_cast<int>(blobs_.size()); })) {
        throw Error(ErrorCode::kTimedOut, "test exchange: not every rank arrived");
      }
      return blobs_;
    };
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<uint8_t>> blobs_;
  int arrived_ = 0;
};

// Runs fn(rank) on n threads; returns each rank's exception (or null).
inline std::vector<std::exception_ptr> run_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

inline void rethrow_any(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// The error a rank threw: code and text; kInternal/"" when it threw none.
struct Outcome {
  ErrorCode code = ErrorCode::kInternal;
  std::string what;
  bool failed = false;
};

inline Outcome outcome_of(const std::exception_ptr& e) {
  Outcome o;
  if (!e) return o;
  o.failed = true;
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    o.code = err.code();
    o.what = err.what();
  } catch (const std::exception& err) {
    o.what = err.what();
  }
  return o;
}

class HostCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/dt-hc-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    ipc_dir_ = pattern;
  }
  void TearDown() override {
    // Every ipc socket file is gone once the communicators are.
    std::vector<std::string> left;
    if (DIR* d = opendir(ipc_dir_.c_str())) {
      while (dirent* e = readdir(d)) {
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) left.push_back(e->d_name);
      }
      closedir(d);
    }
    for (const auto& f : left) unlink((ipc_dir_ + "/" + f).c_str());
    rmdir(ipc_dir_.c_str());
    EXPECT_TRUE(left.empty()) << left.size() << " files left in " << ipc_dir_ << ", e.g. " << left.front();
  }

  HostCommunicatorOptions options(bool ipc = true) const {
    HostCommunicatorOptions o;
    o.timeout_s = 20;
    o.ipc_dir = ipc_dir_;
    o.use_ipc = ipc;
    return o;
  }

  Comms create(int n, const HostCommunicatorOptions& o) {
    InProcessExchange exchange(n);
    Comms comms(static_cast<size_t>(n));
    rethrow_any(run_ranks(n, [&](int r) { comms[static_cast<size_t>(r)] = HostCommunicator::create(r, n, exchange.for_rank(r), o); }));
    return comms;
  }

  std::string ipc_dir_;
};

// Small-integer floats: every order of summation gives the exact sum.
inline float value(int rank, size_t i) { return static_cast<float>(static_cast<int>(i % 29) - 7 + 3 * rank); }

inline void expect_exact_sums(Comms& comms, size_t count) {
  const int n = static_cast<int>(comms.size());
  std::vector<std::vector<float>> data(static_cast<size_t>(n), std::vector<float>(count));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) data[static_cast<size_t>(r)][i] = value(r, i);
  }
  rethrow_any(run_ranks(n, [&](int r) {
    comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), count, DType::kFloat32);
  }));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (int q = 0; q < n; ++q) expected += value(q, i);
      ASSERT_EQ(data[static_cast<size_t>(r)][i], expected) << "rank " << r << " element " << i << " of " << count;
    }
  }
}

// Random floats over many magnitudes, rank r's from seed 1000 r + 17: sums
// whose bits depend on the order of the additions.
inline std::vector<std::vector<float>> random_inputs(int n, size_t count) {
  std::vector<std::vector<float>> inputs(static_cast<size_t>(n), std::vector<float>(count));
  for (int r = 0; r < n; ++r) {
    std::mt19937 gen(static_cast<unsigned>(1000 * r + 17));
    std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
    for (float& v : inputs[static_cast<size_t>(r)]) v = dist(gen) * std::pow(10.0f, dist(gen) / 250.0f);
  }
  return inputs;
}

// All-reduces inputs twice; every rank must end with the same bits, both
// times. Returns the results (of the first run).
inline std::vector<std::vector<float>> expect_bit_identical_twice(Comms& comms,
                                                                  const std::vector<std::vector<float>>& inputs) {
  const int n = static_cast<int>(comms.size());
  const size_t count = inputs.front().size();
  std::vector<std::vector<float>> first;
  for (int run = 0; run < 2; ++run) {
    auto data = inputs;
    rethrow_any(run_ranks(n, [&](int r) {
      comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), count, DType::kFloat32);
    }));
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(std::memcmp(data[0].data(), data[static_cast<size_t>(r)].data(), count * sizeof(float)), 0)
          << n << " ranks, count " << count << ": rank " << r << " differs from rank 0";
    }
    if (run == 0) {
      first = data;
    } else {
      EXPECT_EQ(std::memcmp(first[0].data(), data[0].data(), count * sizeof(float)), 0) << "run 2 differs";
    }
  }
  return first;
}

}  // namespace dt::collective::host::host_communicator_test
