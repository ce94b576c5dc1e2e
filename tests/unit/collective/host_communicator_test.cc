// HostCommunicator with its ranks as threads of this process, each with its
// own communicator, meeting through an in-process all-gather; the links are
// real ipc:// or tcp:// loopback streams.
#include "collective/host/host_communicator.h"

#include <gtest/gtest.h>
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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

namespace dt::collective::host {
namespace {

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
std::vector<std::exception_ptr> run_ranks(int n, const std::function<void(int)>& fn) {
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

void rethrow_any(const std::vector<std::exception_ptr>& errors) {
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

Outcome outcome_of(const std::exception_ptr& e) {
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
float value(int rank, size_t i) { return static_cast<float>(static_cast<int>(i % 29) - 7 + 3 * rank); }

void expect_exact_sums(Comms& comms, size_t count) {
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

struct Shape {
  int ranks;
  bool ipc;
};

class HostCommunicatorSizes : public HostCommunicatorTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(HostCommunicatorSizes, SumsAreExactForEveryCountAndAlgorithm) {
  HostCommunicatorOptions o = options(GetParam().ipc);
  o.small_bytes = 1024;  // 256 floats
  o.chunk_bytes = 4096;  // the large case pipelines dozens of chunks per segment
  Comms comms = create(GetParam().ranks, o);
  for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{255}, size_t{256}, size_t{257}, size_t{100003}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    expect_exact_sums(comms, count);
  }
  // The default options too (recursive doubling up to 64 KiB, 1 MiB chunks).
  Comms defaults = create(GetParam().ranks, options(GetParam().ipc));
  for (size_t count : {size_t{5}, size_t{16384}, size_t{16385}, size_t{600001}}) {
    SCOPED_TRACE("default options, count " + std::to_string(count));
    expect_exact_sums(defaults, count);
  }
}

INSTANTIATE_TEST_SUITE_P(RanksAndTransports, HostCommunicatorSizes,
                         ::testing::Values(Shape{1, true}, Shape{2, true}, Shape{3, true}, Shape{4, true},
                                           Shape{5, true}, Shape{2, false}, Shape{3, false}, Shape{5, false}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return std::to_string(info.param.ranks) + "ranks" + (info.param.ipc ? "Ipc" : "Tcp");
                         });

// Random floats: the same bits on every rank and on a second run.
TEST_F(HostCommunicatorTest, RandomFloatsAreBitIdenticalAcrossRanksAndRuns) {
  for (int n : {3, 4}) {
    HostCommunicatorOptions o = options();
    o.small_bytes = 4096;
    o.chunk_bytes = 2048;
    Comms comms = create(n, o);
    for (size_t count : {size_t{777}, size_t{50001}}) {
      std::vector<std::vector<float>> inputs(static_cast<size_t>(n), std::vector<float>(count));
      for (int r = 0; r < n; ++r) {
        std::mt19937 gen(static_cast<unsigned>(1000 * r + 17));
        std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
        for (float& v : inputs[static_cast<size_t>(r)]) v = dist(gen) * std::pow(10.0f, dist(gen) / 250.0f);
      }
      std::vector<std::vector<float>> first;
      for (int run = 0; run < 2; ++run) {
        auto data = inputs;
        rethrow_any(run_ranks(n, [&](int r) {
          comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), count, DType::kFloat32);
        }));
        for (int r = 1; r < n; ++r) {
          ASSERT_EQ(std::memcmp(data[0].data(), data[static_cast<size_t>(r)].data(), count * sizeof(float)), 0)
              << n << " ranks, count " << count << ": rank " << r << " differs from rank 0";
        }
        if (run == 0) {
          first = data;
        } else {
          ASSERT_EQ(std::memcmp(first[0].data(), data[0].data(), count * sizeof(float)), 0) << "run 2 differs";
        }
        if (n == 4 && count * sizeof(float) <= o.small_bytes) {
          // Recursive doubling's promised tree: (x0 + x1) + (x2 + x3).
          for (size_t i = 0; i < count; ++i) {
            const float expected = (inputs[0][i] + inputs[1][i]) + (inputs[2][i] + inputs[3][i]);
            ASSERT_EQ(data[0][i], expected) << "element " << i;
          }
        }
      }
    }
  }
}

// 16-bit floats summed in float32: 2048 + 1 + 1 + 0 in float16 partial sums
// would stay 2048 (2049 rounds to even); in float32 it is 2050, exact in
// float16. The same with 256 for bfloat16.
TEST_F(HostCommunicatorTest, SixteenBitFloatsAreSummedInFloat32) {
  HostCommunicatorOptions o = options();
  o.small_bytes = 1024;
  o.chunk_bytes = 1024;
  Comms comms = create(4, o);
  struct Case {
    DType dtype;
    float big;
  };
  for (Case c : {Case{DType::kFloat16, 2048.0f}, Case{DType::kBFloat16, 256.0f}}) {
    const auto to16 = [&](float v) { return c.dtype == DType::kFloat16 ? core::float_to_half(v) : core::float_to_bfloat16(v); };
    const auto from16 = [&](uint16_t v) { return c.dtype == DType::kFloat16 ? core::half_to_float(v) : core::bfloat16_to_float(v); };
    for (size_t count : {size_t{100}, size_t{20000}}) {
      const float contribution[4] = {c.big, 1.0f, 1.0f, 0.0f};
      std::vector<std::vector<uint16_t>> data(4, std::vector<uint16_t>(count));
      for (int r = 0; r < 4; ++r) std::fill(data[static_cast<size_t>(r)].begin(), data[static_cast<size_t>(r)].end(), to16(contribution[r]));
      rethrow_any(run_ranks(4, [&](int r) { comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), count, c.dtype); }));
      for (int r = 0; r < 4; ++r) {
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(from16(data[static_cast<size_t>(r)][i]), c.big + 2.0f)
              << core::dtype_name(c.dtype) << " count " << count << " rank " << r << " element " << i;
        }
      }
    }
  }
}

template <typename T>
void check_integer_sums(Comms& comms, DType dtype, size_t count) {
  const int n = static_cast<int>(comms.size());
  const auto v = [](int r, size_t i) -> T {
    const T big = sizeof(T) == 8 ? static_cast<T>(int64_t{1} << 40) : T{1000000};
    return static_cast<T>((r % 2 ? -big : big) + static_cast<T>(i % 1000) * static_cast<T>(r + 1));
  };
  std::vector<std::vector<T>> data(static_cast<size_t>(n), std::vector<T>(count));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) data[static_cast<size_t>(r)][i] = v(r, i);
  }
  rethrow_any(run_ranks(n, [&](int r) { comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), count, dtype); }));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      T expected = 0;
      for (int q = 0; q < n; ++q) expected += v(q, i);
      ASSERT_EQ(data[static_cast<size_t>(r)][i], expected) << "rank " << r << " element " << i;
    }
  }
}

TEST_F(HostCommunicatorTest, SumsInt32AndInt64) {
  HostCommunicatorOptions o = options();
  o.small_bytes = 512;
  o.chunk_bytes = 1000;
  Comms comms = create(3, o);
  for (size_t count : {size_t{10}, size_t{12345}}) {
    check_integer_sums<int32_t>(comms, DType::kInt32, count);
    check_integer_sums<int64_t>(comms, DType::kInt64, count);
  }
  std::vector<double> doubles(4);
  EXPECT_THROW(
      try { comms[0]->all_reduce_sum(doubles.data(), doubles.size(), DType::kFloat64); } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
        throw;
      },
      Error);
}

TEST_F(HostCommunicatorTest, BroadcastsFromANonZeroRoot) {
  Comms comms = create(5, options());
  for (size_t bytes : {size_t{0}, size_t{13}, size_t{3} << 20}) {
    std::vector<std::vector<uint8_t>> data(5, std::vector<uint8_t>(bytes));
    for (int r = 0; r < 5; ++r) {
      for (size_t i = 0; i < bytes; ++i) data[static_cast<size_t>(r)][i] = static_cast<uint8_t>(i * 7 + r);
    }
    rethrow_any(run_ranks(5, [&](int r) { comms[static_cast<size_t>(r)]->broadcast(data[static_cast<size_t>(r)].data(), bytes, 3); }));
    for (int r = 0; r < 5; ++r) {
      for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(data[static_cast<size_t>(r)][i], static_cast<uint8_t>(i * 7 + 3)) << "rank " << r;
    }
  }
}

TEST_F(HostCommunicatorTest, BarrierWaitsForEveryRank) {
  Comms comms = create(5, options());
  std::atomic<int> entered{0};
  std::vector<int> seen(5, -1);
  rethrow_any(run_ranks(5, [&](int r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40 * r));
    entered.fetch_add(1);
    comms[static_cast<size_t>(r)]->barrier();
    seen[static_cast<size_t>(r)] = entered.load();
  }));
  for (int r = 0; r < 5; ++r) EXPECT_EQ(seen[static_cast<size_t>(r)], 5) << "rank " << r << " left the barrier early";
}

TEST_F(HostCommunicatorTest, SizeOneIsTheIdentity) {
  Comms comms = create(1, options());
  std::vector<float> data = {1.5f, -2.0f};
  comms[0]->all_reduce_sum(data.data(), data.size(), DType::kFloat32);
  comms[0]->broadcast(data.data(), sizeof(float) * data.size(), 0);
  comms[0]->barrier();
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_THROW(HostCommunicator::create(2, 2, nullptr, options()), Error);
}

net::JobSecret secret_filled_with(uint8_t v) {
  net::JobSecret s{};
  s.fill(v);
  return s;
}

// Issue 18: with the job's secret, every stream proves both ends hold it
// before any collective; one rank with another secret stops the mesh with
// kUnauthenticated instead of joining it.
TEST_F(HostCommunicatorTest, RanksProveTheJobSecretBeforeTheFirstCollective) {
  for (bool ipc : {true, false}) {
    HostCommunicatorOptions o = options(ipc);
    o.security.secret = secret_filled_with(3);
    Comms comms = create(4, o);
    expect_exact_sums(comms, 1000);
  }
  HostCommunicatorOptions good = options();
  good.security.secret = secret_filled_with(3);
  HostCommunicatorOptions wrong = good;
  wrong.security.secret = secret_filled_with(4);
  wrong.timeout_s = good.timeout_s = 5;
  InProcessExchange exchange(3);
  Comms comms(3);
  const std::vector<std::exception_ptr> errors = run_ranks(3, [&](int r) {
    comms[static_cast<size_t>(r)] = HostCommunicator::create(r, 3, exchange.for_rank(r), r == 1 ? wrong : good);
  });
  int unauthenticated = 0;
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Error& error) {
      if (error.code() == ErrorCode::kUnauthenticated) ++unauthenticated;
    }
  }
  // Ranks 0 and 2 see rank 1's proof fail, rank 1 sees theirs.
  EXPECT_EQ(unauthenticated, 3);
}

// A rank whose communicator is destroyed while the others are in an
// all-reduce: they fail with kPeerLost, long before the timeout.
TEST_F(HostCommunicatorTest, ADestroyedRankIsReportedAsLost) {
  for (int n : {2, 3}) {
    for (size_t count : {size_t{100}, size_t{1} << 20}) {
      HostCommunicatorOptions o = options();
      o.timeout_s = 20;
      Comms comms = create(n, o);
      const int victim = n - 1;
      std::vector<float> dummy(count, 1.0f);
      std::vector<std::vector<float>> data(static_cast<size_t>(n), dummy);
      const auto start = Clock::now();
      const auto errors = run_ranks(n, [&](int r) {
        if (r == victim) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          comms[static_cast<size_t>(r)].reset();
          return;
        }
        comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), count, DType::kFloat32);
      });
      EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
      bool named = false;
      for (int r = 0; r < victim; ++r) {
        const Outcome out = outcome_of(errors[static_cast<size_t>(r)]);
        ASSERT_TRUE(out.failed) << "rank " << r;
        EXPECT_EQ(out.code, ErrorCode::kPeerLost) << out.what;
        named = named || out.what.find("rank " + std::to_string(victim)) != std::string::npos;
        // Unusable afterwards.
        EXPECT_THROW(comms[static_cast<size_t>(r)]->barrier(), Error);
      }
      // A direct neighbour names it; with 3 ranks a rank may instead see its
      // other neighbour give up.
      EXPECT_TRUE(named) << n << " ranks, count " << count;
    }
  }
}

TEST_F(HostCommunicatorTest, ARankThatNeverCallsTimesOut) {
  for (size_t count : {size_t{10}, size_t{1} << 20}) {
    HostCommunicatorOptions o = options();
    o.timeout_s = 0.5;
    Comms comms = create(2, o);
    std::vector<float> data(count, 1.0f);
    const auto start = Clock::now();
    try {
      comms[0]->all_reduce_sum(data.data(), count, DType::kFloat32);
      FAIL() << "all_reduce_sum returned without its peer";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kTimedOut) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("all_reduce"), std::string::npos) << e.what();
    }
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_GE(waited, 0.4);
    EXPECT_LT(waited, 3.0);
  }
}

TEST_F(HostCommunicatorTest, AbortFailsTheCallInProgressAtOnce) {
  Comms comms = create(2, options());
  std::vector<float> data(1000, 1.0f);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    comms[0]->abort("the job is shutting down");
  });
  const auto start = Clock::now();
  try {
    comms[0]->all_reduce_sum(data.data(), data.size(), DType::kFloat32);
    ADD_FAILURE() << "all_reduce_sum survived abort()";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
    EXPECT_NE(std::string(e.what()).find("the job is shutting down"), std::string::npos) << e.what();
  }
  aborter.join();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  try {
    comms[0]->barrier();
    ADD_FAILURE() << "barrier after abort()";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadState) << e.what();
  }
  comms[0]->abort("again");  // idempotent
  // The peer, making the same call, sees rank 0 gone.
  try {
    comms[1]->all_reduce_sum(data.data(), data.size(), DType::kFloat32);
    ADD_FAILURE() << "all_reduce_sum with an aborted peer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

TEST_F(HostCommunicatorTest, ACountMismatchIsAProtocolError) {
  for (int n : {2, 3}) {
    for (size_t base : {size_t{10}, size_t{100000}}) {
      Comms comms = create(n, options());
      std::vector<std::vector<float>> data(static_cast<size_t>(n), std::vector<float>(base + 1, 1.0f));
      const auto errors = run_ranks(n, [&](int r) {
        comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), r == 1 ? base : base + 1,
                                                      DType::kFloat32);
      });
      bool protocol = false;
      for (int r = 0; r < n; ++r) {
        const Outcome out = outcome_of(errors[static_cast<size_t>(r)]);
        ASSERT_TRUE(out.failed) << n << " ranks, rank " << r << " did not fail";
        EXPECT_TRUE(out.code == ErrorCode::kProtocol || out.code == ErrorCode::kPeerLost) << out.what;
        protocol = protocol || out.code == ErrorCode::kProtocol;
        if (n == 2) {
          EXPECT_EQ(out.code, ErrorCode::kProtocol) << out.what;
          EXPECT_NE(out.what.find("rank " + std::to_string(1 - r)), std::string::npos) << out.what;
        }
      }
      EXPECT_TRUE(protocol);
    }
  }
}

TEST_F(HostCommunicatorTest, RejectsBadArguments) {
  EXPECT_THROW(HostCommunicator::create(-1, 2, nullptr, options()), Error);
  EXPECT_THROW(HostCommunicator::create(0, 0, nullptr, options()), Error);
  Comms comms = create(2, options());
  EXPECT_THROW(comms[0]->broadcast(nullptr, 0, 2), Error);
}

}  // namespace
}  // namespace dt::collective::host
