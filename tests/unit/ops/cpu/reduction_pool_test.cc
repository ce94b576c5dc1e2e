// The CPU summing threads (ops/cpu/reduction_pool.h): how many threads a
// pool starts, which sums it cuts into ranges, and that a cut sum has the
// very bits of the serial one, for every floating dtype and thread count.
#include "ops/cpu/reduction_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.h"
#include "error_code_of.h"
#include "ops/cpu/tensor_math.h"
#include "unit/ops/cpu/order_sensitive_floats.h"

namespace dt::ops::cpu {
namespace {

using core::DType;
using core::ErrorCode;

// count elements of dtype from order_sensitive_floats, at most about 3e3
// (five of them still sum to a finite float16).
std::vector<uint8_t> random_elements(DType dtype, size_t count, uint32_t seed) {
  const std::vector<float> values = test_support::order_sensitive_floats(count, seed, 3.5f);
  std::vector<uint8_t> out(count * core::dtype_size(dtype));
  cast(dtype, out.data(), DType::kFloat32, values.data(), count);
  return out;
}

// ((t0 + t1) + t2) + ... as a server's round sums its pushes, serially or on pool.
std::vector<uint8_t> rank_order_sum(DType dtype, size_t count, const std::vector<std::vector<uint8_t>>& terms,
                                    ReductionPool* pool) {
  std::vector<uint8_t> sum = terms.front();
  for (size_t k = 1; k < terms.size(); ++k) {
    if (pool == nullptr) {
      add(dtype, sum.data(), sum.data(), terms[k].data(), count);
    } else {
      pool->add(dtype, sum.data(), sum.data(), terms[k].data(), count);
    }
  }
  return sum;
}

TEST(ReductionPool, StartsOneThreadFewerThanItSumsWith) {
  for (int threads : {1, 2, 4, 7}) {
    ReductionPool pool(ReductionSettings{threads, 4096});
    EXPECT_EQ(pool.threads(), threads);
    EXPECT_EQ(pool.started_threads(), threads - 1) << "the caller sums one range itself";
  }
  ReductionPool mxnet_default;
  EXPECT_EQ(mxnet_default.threads(), 4);
  EXPECT_EQ(mxnet_default.parallel_bytes(), 4000000u);
}

TEST(ReductionPool, CountsOutsideItsRangeAreRefused) {
  for (int threads : {0, -1, ReductionPool::kMaxThreads + 1}) {
    std::string message;
    EXPECT_EQ(test_support::code_of([&] { ReductionPool pool(ReductionSettings{threads, 4096}); }, &message),
              ErrorCode::kInvalidArgument)
        << threads;
    EXPECT_NE(message.find("reduction threads must be 1 to 256"), std::string::npos) << message;
  }
  EXPECT_EQ(test_support::code_of([] { ReductionPool pool(ReductionSettings{2, 0}); }), ErrorCode::kInvalidArgument);
}

TEST(ReductionPool, OnlySumsFromTheBoundOnAreCutIntoRanges) {
  ReductionPool pool(ReductionSettings{4, 4000});
  EXPECT_EQ(pool.ranges_for(DType::kFloat32, 999), 1u) << "3996 bytes: below the bound";
  EXPECT_EQ(pool.ranges_for(DType::kFloat32, 1000), 4u);
  EXPECT_EQ(pool.ranges_for(DType::kFloat16, 1999), 1u) << "the bound counts bytes, as DT_BIGARRAY_BOUND_BYTES";
  EXPECT_EQ(pool.ranges_for(DType::kFloat64, 1 << 20), 4u);
  ReductionPool serial(ReductionSettings{1, 4000});
  EXPECT_EQ(serial.ranges_for(DType::kFloat32, 1 << 20), 1u);

  std::vector<float> a(999, 1.0f), b(999, 2.0f);
  pool.add(DType::kFloat32, a.data(), a.data(), b.data(), a.size());
  EXPECT_EQ(pool.split_sums(), 0u);
  EXPECT_EQ(a[998], 3.0f);
}

TEST(ReductionPool, ACutSumHasTheBitsOfTheSerialSumForOneTwoAndFourThreads) {
  // Odd, so the last range is shorter than the others.
  const size_t count = (size_t{1} << 18) + 13;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    std::vector<std::vector<uint8_t>> terms;
    for (uint32_t k = 0; k < 5; ++k) terms.push_back(random_elements(dtype, count, 17 + k));
    const std::vector<uint8_t> serial = rank_order_sum(dtype, count, terms, nullptr);
    for (int threads : {1, 2, 4}) {
      ReductionPool pool(ReductionSettings{threads, 4096});
      const std::vector<uint8_t> cut = rank_order_sum(dtype, count, terms, &pool);
      EXPECT_EQ(std::memcmp(cut.data(), serial.data(), serial.size()), 0)
          << core::dtype_name(dtype) << " with " << threads << " threads";
      EXPECT_EQ(pool.ranges_for(dtype, count), static_cast<size_t>(threads));
      EXPECT_EQ(pool.split_sums(), threads == 1 ? 0u : terms.size() - 1) << threads;
    }
  }
}

TEST(ReductionPool, CallersOnSeveralThreadsEachGetTheirOwnSum) {
  // A server's handler threads sum their parts on one pool at once.
  ReductionPool pool(ReductionSettings{3, 4096});
  const size_t count = 100003;
  constexpr int kCallers = 4;
  std::vector<std::vector<uint8_t>> a, b, want(kCallers), got(kCallers);
  for (int c = 0; c < kCallers; ++c) {
    a.push_back(random_elements(DType::kFloat32, count, 100 + c));
    b.push_back(random_elements(DType::kFloat32, count, 200 + c));
    want[c].resize(a[c].size());
    add(DType::kFloat32, want[c].data(), a[c].data(), b[c].data(), count);
    got[c].resize(a[c].size());
  }
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int repeat = 0; repeat < 20; ++repeat) pool.add(DType::kFloat32, got[c].data(), a[c].data(), b[c].data(), count);
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(got[c], want[c]) << "caller " << c;
  EXPECT_EQ(pool.split_sums(), uint64_t{kCallers} * 20);
}

TEST(ReductionPool, AnIntegerSumIsRefusedAsTheSerialOneIs) {
  ReductionPool pool(ReductionSettings{2, 64});
  std::vector<int32_t> a(1000, 1);
  EXPECT_EQ(test_support::code_of([&] { pool.add(DType::kInt32, a.data(), a.data(), a.data(), a.size()); }),
            ErrorCode::kNotSupported);
  EXPECT_EQ(pool.split_sums(), 0u);
}

}  // namespace
}  // namespace dt::ops::cpu
