// dist_sync_device with a real merge GPU against dist_sync on the same
// inputs, each worker of a 1-server, 1-worker job whose scheduler and server
// are threads of this test: values of a key on gpu(0) under two contexts
// (so the merge waits for another stream) and on every other GPU (an NCCL
// reduce with two or more GPUs), and outputs on all of them. Inputs are
// small integers, so every order of summation gives the same floats.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/worker_merge.h"
#include "nccl_test_util.h"
#include "unit/ps/dist_device_arrays.h"
#include "unit/ps/dist_device_job.h"

namespace dt::kvstore {
namespace {

using core::NDArray;

constexpr int64_t kCount = 3001;

using test::float_array;
using test::floats_of;
using test::gpu;

// Every output of three pushpull rounds and a pull of key 5, its values on
// `contexts` (one per entry).
std::vector<std::vector<float>> rounds(KVStore& kv, const std::vector<std::shared_ptr<core::Context>>& contexts) {
  kv.init({5}, {float_array(contexts.front(), test::small_integers(1, kCount))});
  std::vector<std::vector<float>> seen;
  for (int round = 0; round < 3; ++round) {
    std::vector<Key> keys;
    std::vector<NDArray> grads;
    for (size_t i = 0; i < contexts.size(); ++i) {
      keys.push_back(5);
      grads.push_back(float_array(contexts[i], test::small_integers(round * 10 + static_cast<int>(i), kCount)));
    }
    kv.pushpull(keys, grads, grads, 0);
    for (const NDArray& g : grads) seen.push_back(floats_of(g));
  }
  std::vector<NDArray> outs;
  for (const auto& ctx : contexts) outs.push_back(float_array(ctx, std::vector<float>(kCount, -1)));
  kv.pull(std::vector<Key>(contexts.size(), 5), outs, 0);
  for (const NDArray& o : outs) seen.push_back(floats_of(o));
  kv.barrier();
  return seen;
}

std::vector<std::vector<float>> run(const std::string& type, const std::vector<std::shared_ptr<core::Context>>& contexts) {
  test::ThreadedJob job(1, 1);
  std::vector<std::vector<float>> seen;
  {
    std::unique_ptr<WorkerMerge> merge;
    if (type == "dist_sync_device") merge = WorkerMerge::on_device(gpu(0));
    DistKVStore kv(type, job.worker(0), job.options(), ps::DataTransport::kAuto, 0, std::move(merge));
    EXPECT_EQ(kv.type(), type);
    seen = rounds(kv, contexts);
  }
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  return seen;
}

void expect_device_merge_equals_host_merge(const std::vector<std::shared_ptr<core::Context>>& contexts) {
  std::vector<std::shared_ptr<core::Context>> on_cpu(contexts.size(), core::make_cpu_context());
  const auto expected = run("dist_sync", on_cpu);
  const auto got = run("dist_sync_device", contexts);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "output " << i;
}

TEST(DistDeviceKVStoreGpu, OneGpuTwoContextsMergeLikeDistSync) {
  // gpu(0) twice, under contexts other than the store's merge context.
  expect_device_merge_equals_host_merge({gpu(0), gpu(0)});
}

TEST(DistDeviceKVStoreGpu, GpuAndHostValuesMergeLikeDistSync) {
  expect_device_merge_equals_host_merge({gpu(0), core::make_cpu_context(), gpu(0)});
}

TEST(DistDeviceKVStoreGpu, EveryGpuMergesThroughNcclLikeDistSync) {
  if (core::gpu_count() < 2) GTEST_SKIP() << "the NCCL reduce across GPUs needs 2 GPUs; " << core::gpu_count() << " visible";
  std::vector<std::shared_ptr<core::Context>> contexts{gpu(0)};
  for (int d = 0; d < core::gpu_count(); ++d) contexts.push_back(gpu(d));
  expect_device_merge_equals_host_merge(contexts);
}

}  // namespace
}  // namespace dt::kvstore
