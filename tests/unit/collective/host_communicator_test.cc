// HostCommunicator with its ranks as threads of this process, each with its
// own communicator, meeting through an in-process all-gather; the links are
// real ipc:// or tcp:// loopback streams.
// Job secrets, lost ranks, timeouts, abort and bad arguments:
// host_communicator_failures_test.cc.
#include <gtest/gtest.h>

#include "host_communicator_test_util.h"

namespace dt::collective::host {
namespace {

using namespace host_communicator_test;

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
      const auto inputs = random_inputs(n, count);
      const auto data = expect_bit_identical_twice(comms, inputs);
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

}  // namespace
}  // namespace dt::collective::host
