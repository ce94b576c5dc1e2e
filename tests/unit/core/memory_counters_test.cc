#include "core/memory_counters.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/context.h"
#include "core/storage.h"

namespace dt::core {
namespace {

TEST(MemoryCountersTest, InUseFollowsAllocationsAndThePeakStaysUntilReset) {
  MemoryCounters counters;
  counters.count_allocation(100);
  counters.count_allocation(50);
  EXPECT_EQ(counters.in_use_bytes(), 150u);
  EXPECT_EQ(counters.peak_bytes(), 150u);
  counters.count_release(100);
  EXPECT_EQ(counters.in_use_bytes(), 50u);
  EXPECT_EQ(counters.peak_bytes(), 150u);
  counters.reset_peak();
  EXPECT_EQ(counters.peak_bytes(), 50u);
  counters.count_allocation(20);
  EXPECT_EQ(counters.peak_bytes(), 70u);
  EXPECT_EQ(counters.allocations(), 3u);
}

// Threads that allocate and free at once: every byte comes back, and the
// peak is at least what one thread held alone and at most all of them.
TEST(MemoryCountersTest, ConcurrentThreadsLeaveExactCounts) {
  MemoryCounters counters;
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counters] {
      for (int i = 0; i < kRounds; ++i) {
        counters.count_allocation(64);
        counters.count_allocation(128);
        counters.count_release(64);
        counters.count_release(128);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counters.in_use_bytes(), 0u);
  EXPECT_EQ(counters.allocations(), size_t{2} * kThreads * kRounds);
  EXPECT_GE(counters.peak_bytes(), 192u);
  EXPECT_LE(counters.peak_bytes(), size_t{192} * kThreads);
}

// The CPU context counts its allocations at the 64-byte size it reserves.
TEST(MemoryCountersTest, CpuContextCountsRoundedStorage) {
  auto ctx = make_cpu_context();
  {
    Storage a(ctx, 1, /*zero=*/true);
    Storage b(ctx, 65, /*zero=*/false);
    const MemoryStats stats = ctx->memory_stats();
    EXPECT_EQ(stats.in_use_bytes, 64u + 128u);
    EXPECT_EQ(stats.peak_bytes, 64u + 128u);
    EXPECT_EQ(stats.cached_bytes, 0u);
    EXPECT_EQ(stats.allocations, 2u);
  }
  EXPECT_EQ(ctx->memory_stats().in_use_bytes, 0u);
  ctx->reset_peak_memory();
  EXPECT_EQ(ctx->memory_stats().peak_bytes, 0u);
}

}  // namespace
}  // namespace dt::core
