// The per-context cache of convolution algorithms (ops/conv_algorithm_cache.h):
// what makes two problems the same key, and the cache's first-value-stays
// rule; checked without a GPU.
#include "ops/conv_algorithm_cache.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <unordered_set>
#include <vector>

namespace dt::ops {
namespace {

Conv2DParams resnet_block_conv() {
  Conv2DParams p;
  p.N = 128, p.C = 64, p.H = 32, p.W = 32, p.K = 64, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1;
  return p;
}

ConvAlgorithmKey key_of(const Conv2DParams& p, core::DType dtype = core::DType::kFloat32,
                        ConvMath math = ConvMath::kFma, int device = 0) {
  return ConvAlgorithmKey::of(p, dtype, math, device);
}

TEST(ConvAlgorithmKey, TheBiasIsNotPartOfTheProblem) {
  Conv2DParams with_bias = resnet_block_conv(), without = resnet_block_conv();
  without.has_bias = false;
  EXPECT_EQ(key_of(with_bias), key_of(without));
  EXPECT_EQ(ConvAlgorithmKeyHash()(key_of(with_bias)), ConvAlgorithmKeyHash()(key_of(without)));
}

TEST(ConvAlgorithmKey, EveryFieldTellsKeysApart) {
  const Conv2DParams base = resnet_block_conv();
  std::vector<std::function<void(Conv2DParams&)>> changes = {
      [](Conv2DParams& p) { p.N = 256; },       [](Conv2DParams& p) { p.C = 32, p.groups = 1; },
      [](Conv2DParams& p) { p.H = 16; },        [](Conv2DParams& p) { p.W = 16; },
      [](Conv2DParams& p) { p.K = 128; },       [](Conv2DParams& p) { p.R = 1; },
      [](Conv2DParams& p) { p.S = 1; },         [](Conv2DParams& p) { p.stride_h = 2; },
      [](Conv2DParams& p) { p.stride_w = 2; },  [](Conv2DParams& p) { p.pad_h = 0; },
      [](Conv2DParams& p) { p.pad_w = 0; },     [](Conv2DParams& p) { p.dilation_h = 2; },
      [](Conv2DParams& p) { p.dilation_w = 2; }, [](Conv2DParams& p) { p.groups = 2; },
      [](Conv2DParams& p) { p.layout = TensorLayout::kNHWC; },
  };
  std::vector<ConvAlgorithmKey> keys = {key_of(base)};
  for (const auto& change : changes) {
    Conv2DParams p = base;
    change(p);
    keys.push_back(key_of(p));
  }
  keys.push_back(key_of(base, core::DType::kFloat16, ConvMath::kTensorOp));
  keys.push_back(key_of(base, core::DType::kBFloat16, ConvMath::kTensorOp));
  keys.push_back(key_of(base, core::DType::kFloat16, ConvMath::kFma));
  keys.push_back(key_of(base, core::DType::kFloat32, ConvMath::kFma, 1));
  std::unordered_set<size_t> hashes;
  for (size_t i = 0; i < keys.size(); ++i) {
    hashes.insert(ConvAlgorithmKeyHash()(keys[i]));
    for (size_t j = 0; j < keys.size(); ++j) EXPECT_EQ(keys[i] == keys[j], i == j) << i << " vs " << j;
  }
  // Not required for correctness, but a hash that collides on single-field
  // changes would make the cache a list.
  EXPECT_EQ(hashes.size(), keys.size());
}

TEST(ConvAlgorithmKey, SwappedFieldsHashApart) {
  Conv2DParams a = resnet_block_conv(), b = resnet_block_conv();
  a.H = 8, a.W = 16;
  b.H = 16, b.W = 8;
  EXPECT_NE(key_of(a), key_of(b));
  EXPECT_NE(ConvAlgorithmKeyHash()(key_of(a)), ConvAlgorithmKeyHash()(key_of(b)));
}

ConvAlgorithms algorithms(int forward, bool searched) {
  ConvAlgorithms a;
  a.forward = {forward, size_t{1} << 20};
  a.backward_data = {1, 0};
  a.backward_filter = {3, 4096};
  a.searched = searched;
  return a;
}

TEST(ConvAlgorithmCache, AMissThenTheStoredChoiceForTheSameProblem) {
  ConvAlgorithmCache cache(ConvAutotune::kLimitedWorkspace);
  EXPECT_EQ(cache.mode(), ConvAutotune::kLimitedWorkspace);
  const ConvAlgorithmKey key = key_of(resnet_block_conv());
  EXPECT_FALSE(cache.find(key).has_value());
  EXPECT_EQ(cache.hits(), 0u);
  cache.insert(key, algorithms(7, true));
  // A second layer of the same shape (without bias, say) finds it.
  Conv2DParams same = resnet_block_conv();
  same.has_bias = false;
  const auto hit = cache.find(key_of(same));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->forward.algorithm, 7);
  EXPECT_EQ(hit->forward.workspace_bytes, size_t{1} << 20);
  EXPECT_EQ(hit->backward_filter.algorithm, 3);
  EXPECT_TRUE(hit->searched);
  EXPECT_EQ(cache.hits(), 1u);
  // Another dtype is another problem.
  EXPECT_FALSE(cache.find(key_of(resnet_block_conv(), core::DType::kFloat16, ConvMath::kTensorOp)).has_value());
  EXPECT_EQ(cache.size(), 1u);
}

TEST(ConvAlgorithmCache, TheFirstValueStoredStays) {
  ConvAlgorithmCache cache(ConvAutotune::kFastest);
  const ConvAlgorithmKey key = key_of(resnet_block_conv());
  EXPECT_EQ(cache.insert(key, algorithms(2, true)).forward.algorithm, 2);
  // A second search of the same key (two threads missed at once) runs the
  // first one's choice, so every layer of a shape runs the same algorithm.
  EXPECT_EQ(cache.insert(key, algorithms(5, false)).forward.algorithm, 2);
  EXPECT_EQ(cache.find(key)->forward.algorithm, 2);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(ConvAlgorithmCache, ThreadsInsertingAndFindingAgreeOnOneValuePerKey) {
  ConvAlgorithmCache cache(ConvAutotune::kLimitedWorkspace);
  std::vector<std::thread> threads;
  std::vector<int> seen(8, -1);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&cache, &seen, t] {
      Conv2DParams p = resnet_block_conv();
      for (int n = 1; n <= 50; ++n) {
        p.N = n;
        cache.insert(key_of(p), algorithms(t, true));
      }
      p.N = 50;
      seen[static_cast<size_t>(t)] = cache.find(key_of(p))->forward.algorithm;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cache.size(), 50u);
  for (int s : seen) EXPECT_EQ(s, seen[0]);
}

}  // namespace
}  // namespace dt::ops
