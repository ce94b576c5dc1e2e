// The "nccl" and "device" kvstores against "local" on the same inputs: the
// values of a key on every visible GPU (two of them on gpu(0), so a device
// also sums locally before the collective) must push, pull and pushpull to
// exactly the results the CPU store gives. With one GPU the stores take their
// single-device path; the NCCL path needs two (the multi-GPU tests skip).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "kvstore/local_kvstore.h"
#include "nccl_test_util.h"
#include "optim/optimizer_config.h"

namespace dt::kvstore {
namespace {

using core::DType;
using core::NDArray;
using core::Shape;

constexpr int64_t kCount = 4099;

std::vector<float> pattern(int seed) { return test::small_integers(seed, kCount); }

NDArray on(const std::shared_ptr<core::Context>& ctx, const std::vector<float>& host) {
  NDArray a = NDArray::empty(ctx, DType::kFloat32, Shape({kCount}));
  a.copy_from_host(host.data(), host.size() * sizeof(float));
  return a;
}

std::vector<float> host_of(const NDArray& a) {
  std::vector<float> out(a.size());
  a.copy_to_host(out.data(), out.size() * sizeof(float));
  return out;
}

class NcclKVStore : public ::testing::TestWithParam<LocalKVStore::Reduce> {
 protected:
  void SetUp() override {
    for (int d = 0; d < core::gpu_count(); ++d) {
      gpus_.push_back(core::make_context(static_cast<int>(core::DeviceType::kGpu), d));
    }
    // Contexts for the values: gpu(0) twice, then every other GPU.
    value_contexts_.push_back(gpus_[0]);
    for (const auto& g : gpus_) value_contexts_.push_back(g);
  }
  // GTEST_SKIP() returns only from the function it is written in, so the
  // test itself must return: `if (!has_gpus(2)) GTEST_SKIP() << ...;`.
  bool has_gpus(int n) const { return static_cast<int>(gpus_.size()) >= n; }
  // One value per value context for key, and the same values on the CPU.
  void values_for(Key key, int round, std::vector<Key>& keys, std::vector<NDArray>& gpu,
                  std::vector<NDArray>& cpu) {
    for (size_t i = 0; i < value_contexts_.size(); ++i) {
      const std::vector<float> host = pattern(static_cast<int>(key * 100 + round * 10 + i));
      keys.push_back(key);
      gpu.push_back(on(value_contexts_[i], host));
      cpu.push_back(on(cpu_, host));
    }
  }
  std::vector<NDArray> outputs(std::vector<Key>& keys, Key key) {
    std::vector<NDArray> outs;
    for (const auto& ctx : value_contexts_) {
      keys.push_back(key);
      outs.push_back(on(ctx, std::vector<float>(kCount, -99.0f)));
    }
    return outs;
  }

  // Runs the same rounds on both stores: init, push, pull, pushpull.
  void compare_with_local(LocalKVStore& store, LocalKVStore& local) {
    const std::vector<Key> init_keys{7, 9};
    store.init(init_keys, {on(gpus_[0], pattern(1)), on(gpus_[0], pattern(2))});
    local.init(init_keys, {on(cpu_, pattern(1)), on(cpu_, pattern(2))});
    for (int round = 0; round < 3; ++round) {
      std::vector<Key> keys;
      std::vector<NDArray> gpu, cpu;
      values_for(7, round, keys, gpu, cpu);
      values_for(9, round, keys, gpu, cpu);
      store.push(keys, gpu, 0);
      local.push(keys, cpu, 0);
      std::vector<Key> out_keys;
      std::vector<NDArray> outs = outputs(out_keys, 7);
      const std::vector<NDArray> more = outputs(out_keys, 9);
      outs.insert(outs.end(), more.begin(), more.end());
      store.pull(out_keys, outs, 0);
      NDArray ref7 = on(cpu_, std::vector<float>(kCount, 0.0f));
      NDArray ref9 = on(cpu_, std::vector<float>(kCount, 0.0f));
      local.pull({7, 9}, {ref7, ref9}, 0);
      for (size_t i = 0; i < outs.size(); ++i) {
        EXPECT_EQ(host_of(outs[i]), host_of(out_keys[i] == 7 ? ref7 : ref9)) << "round " << round << " out " << i;
      }
      // pushpull: the outputs receive the new value.
      std::vector<Key> pp_keys;
      std::vector<NDArray> pp_gpu, pp_cpu;
      values_for(9, round + 5, pp_keys, pp_gpu, pp_cpu);
      std::vector<Key> pp_out_keys;
      std::vector<NDArray> pp_outs = outputs(pp_out_keys, 9);
      ASSERT_EQ(pp_out_keys, pp_keys);
      store.pushpull(pp_keys, pp_gpu, pp_outs, 0);
      local.push(pp_keys, pp_cpu, 0);
      local.pull({9}, {ref9}, 0);
      for (const NDArray& o : pp_outs) EXPECT_EQ(host_of(o), host_of(ref9)) << "pushpull round " << round;
    }
  }

  std::shared_ptr<core::Context> cpu_ = core::make_cpu_context();
  std::vector<std::shared_ptr<core::Context>> gpus_;
  std::vector<std::shared_ptr<core::Context>> value_contexts_;
};

TEST_P(NcclKVStore, PushPullAndPushPullMatchTheLocalStore) {
  LocalKVStore store(GetParam());
  LocalKVStore local(LocalKVStore::Reduce::kOnCpu);
  compare_with_local(store, local);
}

TEST_P(NcclKVStore, OptimizerOnTheStoreMatchesTheLocalStore) {
  LocalKVStore store(GetParam());
  LocalKVStore local(LocalKVStore::Reduce::kOnCpu);
  // Learning rate 1: the updates stay sums of small integers, exact in f32.
  for (LocalKVStore* s : {&store, &local}) s->set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 1.0));
  compare_with_local(store, local);
}

TEST_P(NcclKVStore, KeysOnSeveralGpusTakeTheCollectivePath) {
  if (!has_gpus(2)) GTEST_SKIP() << "needs 2 GPUs, " << gpus_.size() << " visible";
  LocalKVStore store(GetParam());
  store.init({1}, {on(gpus_[1], pattern(3))});
  // One value per GPU, none on the CPU: the reduce spans every GPU.
  std::vector<Key> keys;
  std::vector<NDArray> values;
  std::vector<float> expected(kCount, 0.0f);
  for (size_t g = 0; g < gpus_.size(); ++g) {
    const std::vector<float> host = pattern(static_cast<int>(g));
    for (int64_t i = 0; i < kCount; ++i) expected[i] += host[i];
    keys.push_back(1);
    values.push_back(on(gpus_[g], host));
  }
  store.push(keys, values, 0);
  // Outputs on GPUs other than the merge GPU only: the root broadcasts in place.
  std::vector<Key> out_keys;
  std::vector<NDArray> outs;
  for (size_t g = 1; g < gpus_.size(); ++g) {
    out_keys.push_back(1);
    outs.push_back(on(gpus_[g], std::vector<float>(kCount, -1.0f)));
    out_keys.push_back(1);
    outs.push_back(on(gpus_[g], std::vector<float>(kCount, -1.0f)));
  }
  store.pull(out_keys, outs, 0);
  for (const NDArray& o : outs) EXPECT_EQ(host_of(o), expected);
}

// Issue 15: "device" reduces its keys round-robin over the GPUs (MXNet's
// CommDevice): equal keys alternate merge GPUs, the optimizer runs there,
// and the results are the CPU store's. "nccl" roots every key on gpu(0).
TEST_P(NcclKVStore, DeviceSpreadsKeysOverTheGpusOfTheirValues) {
  if (!has_gpus(2)) GTEST_SKIP() << "needs 2 GPUs, " << gpus_.size() << " visible";
  LocalKVStore store(GetParam());
  LocalKVStore local(LocalKVStore::Reduce::kOnCpu);
  for (LocalKVStore* s : {&store, &local}) s->set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 1.0));
  const std::vector<Key> keys{10, 11, 12, 13};
  std::vector<NDArray> init_gpu, init_cpu;
  for (Key k : keys) {
    init_gpu.push_back(on(gpus_[0], pattern(static_cast<int>(k))));
    init_cpu.push_back(on(cpu_, pattern(static_cast<int>(k))));
  }
  store.init(keys, init_gpu);
  local.init(keys, init_cpu);
  for (int round = 0; round < 2; ++round) {
    std::vector<Key> push_keys;
    std::vector<NDArray> gpu, cpu;
    for (Key k : keys) values_for(k, round, push_keys, gpu, cpu);
    store.push(push_keys, gpu, 0);
    local.push(push_keys, cpu, 0);
  }
  const bool device = GetParam() == LocalKVStore::Reduce::kOnGpu;
  const int n = static_cast<int>(gpus_.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(store.merge_context_of(keys[i])->device_id(), device ? static_cast<int>(i) % n : 0) << "key " << keys[i];
    NDArray out = on(gpus_[1], std::vector<float>(kCount, -1.0f));
    NDArray ref = on(cpu_, std::vector<float>(kCount, 0.0f));
    store.pull({keys[i]}, {out}, 0);
    local.pull({keys[i]}, {ref}, 0);
    EXPECT_EQ(host_of(out), host_of(ref)) << "key " << keys[i];
  }
}

INSTANTIATE_TEST_SUITE_P(DeviceAndNccl, NcclKVStore,
                         ::testing::Values(LocalKVStore::Reduce::kOnGpu, LocalKVStore::Reduce::kNccl),
                         [](const auto& info) {
                           return std::string(info.param == LocalKVStore::Reduce::kNccl ? "nccl" : "device");
                         });

}  // namespace
}  // namespace dt::kvstore
