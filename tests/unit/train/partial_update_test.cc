// SINGA's partial update: how parameters are cut into chunks (sizes in
// backward order, the chunk size in elements), which chunk each step
// averages, and what one average does to the weights through a store; and
// the sync modes' options and the compression each sets.
#include "train/partial_update.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../../error_code_of.h"
#include "core/context.h"
#include "core/error.h"
#include "kvstore/kvstore.h"
#include "ps/compression/compression_mode.h"
#include "train/sync_mode.h"

namespace dt::train {
namespace {

using core::DType;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using test_support::code_of;
using Chunks = std::vector<std::vector<size_t>>;

Chunks chunks_of(const std::vector<size_t>& sizes, size_t chunk_elements) {
  const PartialUpdate partial(sizes, chunk_elements);
  Chunks out;
  for (size_t c = 0; c < partial.num_chunks(); ++c) out.push_back(partial.chunk(c));
  return out;
}

TEST(PartialUpdate, SmallParametersGatherUntilAChunkHoldsMoreThanItsSize) {
  // 10 + 20 = 30 > 25 closes the first chunk; 30 > 25 is a chunk alone; the
  // last one, left open, is the last chunk.
  EXPECT_EQ(chunks_of({10, 20, 30, 5}, 25), (Chunks{{0, 1}, {2}, {3}}));
  // Exactly the chunk size does not close a chunk (SINGA: acc > threshold).
  EXPECT_EQ(chunks_of({25, 25, 1}, 25), (Chunks{{0, 1}, {2}}));
  EXPECT_EQ(chunks_of({1, 2, 3}, 2097152), (Chunks{{0, 1, 2}}));
  // Every parameter larger than the chunk size: one chunk each.
  EXPECT_EQ(chunks_of({7, 8, 9}, 1), (Chunks{{0}, {1}, {2}}));
}

TEST(PartialUpdate, AParameterLargerThanAChunkIsAloneAndLeavesTheOpenChunkOpen) {
  // 100 > 25 goes alone at once; 10 + 10 + 20 = 40 > 25 then closes the
  // chunk 10 opened before it: chunks need not be contiguous.
  EXPECT_EQ(chunks_of({10, 100, 10, 20}, 25), (Chunks{{1}, {0, 2, 3}}));
  EXPECT_EQ(chunks_of({100, 200}, 25), (Chunks{{0}, {1}}));
  EXPECT_EQ(chunks_of({3, 100}, 25), (Chunks{{1}, {0}}));
}

TEST(PartialUpdate, EveryParameterIsInExactlyOneChunk) {
  const std::vector<size_t> sizes = {4, 48, 12, 192, 16, 320, 1, 1, 99, 100, 101, 7};
  for (size_t chunk : {1, 5, 50, 100, 101, 400, 10000}) {
    std::vector<int> seen(sizes.size(), 0);
    for (const auto& c : chunks_of(sizes, chunk)) {
      EXPECT_FALSE(c.empty());
      for (size_t p : c) ++seen.at(p);
    }
    for (size_t p = 0; p < sizes.size(); ++p) EXPECT_EQ(seen[p], 1) << "parameter " << p << ", chunk " << chunk;
  }
}

TEST(PartialUpdate, StepsRotateThroughTheChunks) {
  const PartialUpdate partial({10, 20, 30, 5}, 25);
  ASSERT_EQ(partial.num_chunks(), 3u);
  std::vector<size_t> seen;
  for (int64_t step = 0; step < 7; ++step) seen.push_back(partial.chunk_of_step(step));
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(code_of([&] { partial.chunk_of_step(-1); }), ErrorCode::kInvalidArgument);
}

TEST(PartialUpdate, BadArguments) {
  EXPECT_EQ(code_of([] { PartialUpdate({1, 2}, 0); }), ErrorCode::kInvalidArgument);
  const PartialUpdate none({}, 10);
  EXPECT_EQ(none.num_chunks(), 0u);
  EXPECT_EQ(code_of([&] { none.chunk_of_step(0); }), ErrorCode::kBadState);
}

// A store of `workers` workers whose others always push `other`: push sums
// this worker's value and theirs, which the next pull returns. It records
// the keys of each push.
class TwoWorkerStore final : public kvstore::KVStore {
 public:
  explicit TwoWorkerStore(float other) : other_(other) {}
  std::string type() const override { return "test"; }
  int num_workers() const override { return 2; }
  void init(const std::vector<kvstore::Key>&, const std::vector<NDArray>&) override {}
  void push(const std::vector<kvstore::Key>& keys, const std::vector<NDArray>& values, int) override {
    pushed.push_back(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      std::vector<float> v(values[i].size());
      values[i].copy_to_host(v.data(), v.size() * sizeof(float));
      for (float& x : v) x += other_;
      stored_[keys[i]] = v;
    }
  }
  void pull(const std::vector<kvstore::Key>& keys, const std::vector<NDArray>& outs, int) override {
    for (size_t i = 0; i < keys.size(); ++i) {
      const auto& v = stored_.at(keys[i]);
      outs[i].copy_from_host(v.data(), v.size() * sizeof(float));
    }
  }
  void set_optimizer(const optim::OptimizerConfig&) override {}
  bool has_optimizer() const override { return false; }
  void set_learning_rate(double) override {}
  void set_rescale_grad(double) override {}
  core::NamedArrays optimizer_state(const std::string&) const override { return {}; }
  void load_optimizer_state(const core::NamedArrays&, const std::string&) override {}

  std::vector<std::vector<kvstore::Key>> pushed;

 private:
  float other_;
  std::map<kvstore::Key, std::vector<float>> stored_;
};

NDArray filled(size_t n, float value) {
  std::vector<float> v(n, value);
  NDArray a = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({static_cast<int64_t>(n)}));
  a.copy_from_host(v.data(), n * sizeof(float));
  return a;
}

std::vector<float> values(const NDArray& a) {
  std::vector<float> v(a.size());
  a.copy_to_host(v.data(), v.size() * sizeof(float));
  return v;
}

TEST(PartialUpdate, AverageReplacesOnlyTheStepsChunkByTheMeanOverWorkers) {
  // Chunks {0, 1}, {2}, {3}; keys 40.. stand for the parameters' keys.
  const PartialUpdate partial({10, 20, 30, 5}, 25);
  const std::vector<kvstore::Key> keys = {40, 41, 42, 43};
  std::vector<NDArray> weights = {filled(10, 1.0f), filled(20, 3.0f), filled(30, 5.0f), filled(5, 7.0f)};
  TwoWorkerStore store(/*other=*/2.0f);
  partial.average(store, keys, weights, /*step=*/4);  // chunk 1: position 2 only
  ASSERT_EQ(store.pushed.size(), 1u);
  EXPECT_EQ(store.pushed[0], (std::vector<kvstore::Key>{42}));
  EXPECT_EQ(values(weights[2]), std::vector<float>(30, 3.5f));  // (5 + 2) / 2
  EXPECT_EQ(values(weights[0]), std::vector<float>(10, 1.0f));
  EXPECT_EQ(values(weights[1]), std::vector<float>(20, 3.0f));
  EXPECT_EQ(values(weights[3]), std::vector<float>(5, 7.0f));
  partial.average(store, keys, weights, /*step=*/6);  // chunk 0: positions 0 and 1
  EXPECT_EQ(store.pushed[1], (std::vector<kvstore::Key>{40, 41}));
  EXPECT_EQ(values(weights[0]), std::vector<float>(10, 1.5f));
  EXPECT_EQ(values(weights[1]), std::vector<float>(20, 2.5f));
  EXPECT_EQ(code_of([&] { partial.average(store, {40}, {weights[0]}, 6); }), ErrorCode::kInvalidArgument);
}

TEST(SyncOptions, HalfAndSparseNameTheCompressionTheySet) {
  using ps::compression::CompressionConfig;
  using ps::compression::CompressionMode;
  SyncOptions o;
  EXPECT_EQ(o.compression_spec(), "none");
  o.mode = SyncMode::kPartial;
  EXPECT_EQ(o.compression_spec(), "none");
  o.mode = SyncMode::kHalf;
  EXPECT_EQ(CompressionConfig::parse(o.compression_spec()), (CompressionConfig{CompressionMode::kFp16, 0, false}));
  o.mode = SyncMode::kSparse;  // SINGA's defaults: threshold 0.05, accumulated
  EXPECT_EQ(CompressionConfig::parse(o.compression_spec()),
            (CompressionConfig{CompressionMode::kThreshold, 0.05, true}));
  o.sparse_topk = true;
  o.sparse_value = 0.01;
  o.sparse_accumulate = false;
  EXPECT_EQ(CompressionConfig::parse(o.compression_spec()), (CompressionConfig{CompressionMode::kTopK, 0.01, false}));
  EXPECT_STREQ(sync_mode_name(SyncMode::kPartial), "partial");
}

TEST(SyncOptions, ValuesOutOfRangeAreInvalidArguments) {
  SyncOptions o;
  o.mode = static_cast<SyncMode>(9);
  EXPECT_EQ(code_of([&] { o.validate(); }), ErrorCode::kInvalidArgument);
  o = SyncOptions{};
  o.mode = SyncMode::kPartial;
  o.partial_chunk_elements = 0;
  EXPECT_EQ(code_of([&] { o.validate(); }), ErrorCode::kInvalidArgument);
  o = SyncOptions{};
  o.mode = SyncMode::kSparse;
  for (double bad : {0.0, -1.0, std::nan("")}) {
    o.sparse_value = bad;
    EXPECT_EQ(code_of([&] { o.validate(); }), ErrorCode::kInvalidArgument) << bad;
  }
  o.sparse_value = 5.0;
  o.validate();  // a threshold may exceed 1
  o.sparse_topk = true;
  std::string message;
  EXPECT_EQ(code_of([&] { o.validate(); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("(0, 1]"), std::string::npos) << message;
  o.sparse_value = 1.0;
  o.validate();
}

}  // namespace
}  // namespace dt::train
