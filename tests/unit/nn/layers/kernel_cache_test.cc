// KernelCache: the one per-layer cache of kernels keyed by the input's
// device, dtype and shape. GPU contexts cannot be made here, so these tests
// cover the CPU side; tests/gpu covers the layers on a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "nn/layers/layer_support.h"

namespace dt::nn::layers {
namespace {

struct Probe {
  int id;
};

core::NDArray input_of(const std::shared_ptr<core::Context>& ctx, int64_t rows) {
  return core::NDArray::empty(ctx, core::DType::kFloat32, core::Shape({rows, 3}));
}

class KernelCacheTest : public ::testing::Test {
 protected:
  std::unique_ptr<Probe> make() { return std::make_unique<Probe>(Probe{++built_}); }

  std::shared_ptr<core::Context> cpu_ = core::make_cpu_context();
  KernelCache<Probe> cache_;
  int built_ = 0;
};

TEST_F(KernelCacheTest, BuildsOneKernelPerShape) {
  const core::NDArray a = input_of(cpu_, 2), b = input_of(cpu_, 4);
  EXPECT_EQ(cache_.find(a), nullptr);
  Probe& first = cache_.get(a, [&] { return make(); });
  EXPECT_EQ(&cache_.get(a, [&] { return make(); }), &first);
  EXPECT_EQ(cache_.find(a), &first);
  EXPECT_EQ(built_, 1);
  EXPECT_EQ(cache_.find(b), nullptr);
  EXPECT_NE(&cache_.get(b, [&] { return make(); }), &first);
  EXPECT_EQ(built_, 2);
}

TEST_F(KernelCacheTest, ACpuKernelServesEveryCpuContext) {
  const core::NDArray a = input_of(cpu_, 2);
  const core::NDArray b = input_of(core::make_cpu_context(), 2);
  Probe& first = cache_.get(a, [&] { return make(); });
  EXPECT_EQ(cache_.find(b), &first);
}

TEST_F(KernelCacheTest, DropsTheOldestBeyondItsCapacity) {
  std::vector<core::NDArray> inputs;
  for (int64_t rows = 1; rows <= static_cast<int64_t>(KernelCache<Probe>::kCapacity) + 1; ++rows) {
    inputs.push_back(input_of(cpu_, rows));
    cache_.get(inputs.back(), [&] { return make(); });
  }
  EXPECT_EQ(cache_.find(inputs.front()), nullptr);
  for (size_t i = 1; i < inputs.size(); ++i) EXPECT_NE(cache_.find(inputs[i]), nullptr) << i;
  EXPECT_EQ(cache_.get(inputs.front(), [&] { return make(); }).id, built_);
}

TEST_F(KernelCacheTest, AFailedBuildLeavesTheCacheAsItWas) {
  std::vector<core::NDArray> inputs;
  for (int64_t rows = 1; rows <= static_cast<int64_t>(KernelCache<Probe>::kCapacity); ++rows) {
    inputs.push_back(input_of(cpu_, rows));
    cache_.get(inputs.back(), [&] { return make(); });
  }
  const core::NDArray extra = input_of(cpu_, 100);
  EXPECT_THROW(cache_.get(extra, []() -> std::unique_ptr<Probe> { throw std::invalid_argument("bad shape"); }),
               std::invalid_argument);
  EXPECT_EQ(cache_.find(extra), nullptr);
  for (const core::NDArray& input : inputs) EXPECT_NE(cache_.find(input), nullptr);
}

}  // namespace
}  // namespace dt::nn::layers
