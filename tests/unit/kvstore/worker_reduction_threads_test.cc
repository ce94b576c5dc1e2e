// MXNET_KVSTORE_REDUCTION_NTHREADS on a worker: the threads that merge the
// values a call lists under one key on the CPU (a dist store's host merge,
// the "local" store), with the bits of the serial sum.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "kvstore/local_kvstore.h"
#include "kvstore/worker_merge.h"
#include "unit/ops/cpu/order_sensitive_floats.h"

namespace dt::kvstore {
namespace {

using core::DType;
using core::NDArray;
using core::Shape;

constexpr int64_t kElements = 50021;

std::vector<float> gradient(uint32_t seed) {
  return test_support::order_sensitive_floats(static_cast<size_t>(kElements), seed);
}

NDArray array(const std::vector<float>& values) {
  NDArray a = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({static_cast<int64_t>(values.size())}));
  a.copy_from_host(values.data(), values.size() * sizeof(float));
  return a;
}

// Four replicas' gradients and their sum in the order listed.
struct Replicas {
  Replicas() {
    for (uint32_t k = 0; k < 4; ++k) {
      grads.push_back(gradient(k + 11));
      values.push_back(array(grads.back()));
    }
    serial_sum = grads[0];
    for (size_t k = 1; k < grads.size(); ++k) {
      for (int64_t i = 0; i < kElements; ++i) serial_sum[i] += grads[k][i];
    }
  }
  std::vector<std::vector<float>> grads;
  std::vector<NDArray> values;
  std::vector<float> serial_sum;
};

bool same_bits(const void* got, const std::vector<float>& want) {
  return std::memcmp(got, want.data(), want.size() * sizeof(float)) == 0;
}

TEST(WorkerReductionThreads, TheHostMergeSumsOnThePoolWithTheSerialSumsBits) {
  const Replicas r;
  for (int threads : {1, 2, 4}) {
    auto merge = WorkerMerge::on_host(ops::cpu::ReductionSettings{threads, 4096});
    ASSERT_NE(merge->reduction_pool(), nullptr);
    EXPECT_EQ(merge->reduction_pool()->threads(), threads);
    EXPECT_EQ(merge->reduction_pool()->started_threads(), threads - 1);
    WorkerMerge::Buffers buffers;
    buffers.host = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({kElements}));
    const uint8_t* sent = merge->push_source(buffers, r.values, {0, 1, 2, 3});
    EXPECT_TRUE(same_bits(sent, r.serial_sum)) << threads << " threads";
    EXPECT_EQ(merge->reduction_pool()->split_sums(), threads == 1 ? 0u : 3u) << threads;
  }
}

TEST(WorkerReductionThreads, ADeviceMergeOnTheCpuSumsOnThePoolToo) {
  // As the tests without a GPU run the "_device" types.
  const Replicas r;
  auto merge = WorkerMerge::on_device(core::make_cpu_context(), ops::cpu::ReductionSettings{3, 4096});
  ASSERT_NE(merge->reduction_pool(), nullptr);
  WorkerMerge::Buffers buffers;
  buffers.host = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({kElements}));
  EXPECT_TRUE(same_bits(merge->push_source(buffers, r.values, {0, 1, 2, 3}), r.serial_sum));
  EXPECT_EQ(merge->reduction_pool()->split_sums(), 3u);
}

TEST(WorkerReductionThreads, TheLocalStoreSumsAPushOnItsThreadsWithTheSerialSumsBits) {
  const Replicas r;
  for (int threads : {1, 2, 4}) {
    LocalKVStore store(LocalKVStore::Reduce::kOnCpu, ops::cpu::ReductionSettings{threads, 4096});
    store.init({3}, {array(std::vector<float>(kElements, 0.0f))});
    store.push({3, 3, 3, 3}, r.values, 0);
    NDArray out = array(std::vector<float>(kElements, 0.0f));
    store.pull({3}, {out}, 0);
    EXPECT_TRUE(same_bits(out.data(), r.serial_sum)) << threads << " threads";
  }
}

}  // namespace
}  // namespace dt::kvstore
