// MXNET_KVSTORE_REDUCTION_NTHREADS on a server: the variable sizes the
// threads that sum a large part's dist_sync round, and the round's sum keeps
// its rank-order bits whatever their number.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "ps/job/environment_options.h"
#include "ps/server/key_store.h"
#include "ps/server/request_handler.h"
#include "unit/ops/cpu/order_sensitive_floats.h"
#include "unit/ps/job/env_of.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::Shape;

// Large enough to pass the 4096-byte bound the tests set, odd so that the
// ranges differ in length.
constexpr int64_t kElements = 100003;

PartInfo part_info() { return PartInfo{PartKey{7, 0, kElements}, DType::kFloat32, Shape({kElements})}; }

std::vector<float> gradient(uint32_t seed) {
  return test_support::order_sensitive_floats(static_cast<size_t>(kElements), seed);
}

// One dist_sync round of three workers pushing in the order 2, 0, 1; the
// pulled sum.
std::vector<float> one_round(ServerKeyStore& store) {
  const std::vector<float> zero(kElements, 0.0f);
  for (int w = 2; w >= 0; --w) store.init(w, part_info(), zero.data(), zero.size() * sizeof(float));
  for (int w : {2, 0, 1}) {
    const std::vector<float> g = gradient(static_cast<uint32_t>(w) + 1);
    store.push(w, part_info(), 1, g.data(), g.size() * sizeof(float),
               [](const Error* e) { EXPECT_EQ(e, nullptr) << e->what(); });
  }
  std::vector<float> sum;
  store.pull(part_info(), 1, [&sum](const Error* e, const ServerKeyStore::PullAnswer& a) {
    ASSERT_EQ(e, nullptr) << e->what();
    sum.resize(a.bytes / sizeof(float));
    std::memcpy(sum.data(), a.data, a.bytes);
  });
  return sum;
}

TEST(PsServerReductionThreads, TheVariableSizesTheThreadsThatSumARound) {
  const PsOptions options = ps_options_from_environment(
      env_of({{"MXNET_KVSTORE_REDUCTION_NTHREADS", "3"}, {"DT_BIGARRAY_BOUND_BYTES", "4096"}}));
  ASSERT_EQ(options.reduction_threads, 3);
  ServerRequestHandler server(3, 0, options.reduction());
  ServerKeyStore& store = server.store();
  EXPECT_EQ(store.reduction_pool().threads(), 3);
  EXPECT_EQ(store.reduction_pool().started_threads(), 2);
  store.set_mode(ServerKeyStore::Mode::kSync);
  ASSERT_EQ(one_round(store).size(), static_cast<size_t>(kElements));
  // Three pushes: the first is copied, the two others added, each in ranges.
  EXPECT_EQ(store.reduction_pool().split_sums(), 2u);
}

TEST(PsServerReductionThreads, UnsetItIsMxnetsFourThreadsFromTheBigArrayBoundOn) {
  const PsOptions options = ps_options_from_environment(env_of({}));
  ServerKeyStore store(3, 0, options.reduction());
  EXPECT_EQ(store.reduction_pool().threads(), 4);
  EXPECT_EQ(store.reduction_pool().parallel_bytes(), 4000000u);
  store.set_mode(ServerKeyStore::Mode::kSync);
  one_round(store);
  EXPECT_EQ(store.reduction_pool().split_sums(), 0u) << "400 KB is below the bound: summed on one thread";
}

TEST(PsServerReductionThreads, ARoundHasTheSameBitsWithOneTwoAndFourThreads) {
  std::vector<float> want(kElements);
  {
    const std::vector<float> g0 = gradient(1), g1 = gradient(2), g2 = gradient(3);
    for (int64_t i = 0; i < kElements; ++i) want[i] = (g0[i] + g1[i]) + g2[i];
  }
  for (int threads : {1, 2, 4}) {
    ServerKeyStore store(3, 0, ops::cpu::ReductionSettings{threads, 4096});
    store.set_mode(ServerKeyStore::Mode::kSync);
    const std::vector<float> got = one_round(store);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << threads << " threads";
    EXPECT_EQ(store.reduction_pool().split_sums(), threads == 1 ? 0u : 2u) << threads;
  }
}

TEST(PsServerReductionThreads, ValuesThatAreNotAThreadCountAreErrorsNamingTheVariable) {
  for (const char* bad : {"0", "-2", "four", "3.5", "257", "99999999999"}) {
    std::string message = "no error";
    try {
      ps_options_from_environment(env_of({{"MXNET_KVSTORE_REDUCTION_NTHREADS", bad}}));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
      message = e.what();
    }
    EXPECT_NE(message.find("MXNET_KVSTORE_REDUCTION_NTHREADS=\""), std::string::npos) << bad << ": " << message;
  }
  PsOptions options;
  options.reduction_threads = 0;
  EXPECT_THROW(options.validate(), Error);
}

}  // namespace
}  // namespace dt::ps
