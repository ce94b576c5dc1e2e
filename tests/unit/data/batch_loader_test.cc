#include "data/batch_loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "data/mnist_dataset.h"
#include "counting_dataset.h"
#include "data_test_util.h"

namespace dt::data {
namespace {

using core::DType;
using core::ErrorCode;
using testing::CountingDataset;
using testing::thrown_by;
using Indices = std::vector<int64_t>;
using namespace std::chrono_literals;

LoaderOptions options_with(int64_t batch_size, LastBatch last_batch, float mean = 0.0f, float std = 1.0f) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.last_batch = last_batch;
  options.mean = mean;
  options.std = std;
  return options;
}

// The sample indices of every batch of one epoch (labels are indices).
std::vector<Indices> read_epoch(BatchLoader& loader, int64_t epoch) {
  loader.start_epoch(epoch);
  std::vector<Indices> batches;
  Batch batch;
  while (loader.next(batch)) {
    const int32_t* labels = batch.labels.data_as<int32_t>();
    batches.emplace_back(labels, labels + batch.size());
  }
  return batches;
}

TEST(BatchLoaderTest, KeepYieldsASmallerLastBatch) {
  BatchLoader loader(std::make_shared<CountingDataset>(10), SplitSampler(10), options_with(4, LastBatch::kKeep));
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  const std::vector<Indices> expected{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}};
  EXPECT_EQ(read_epoch(loader, 0), expected);
  EXPECT_EQ(read_epoch(loader, 1), expected);
  EXPECT_EQ(loader.batches_per_epoch(), 3);
}

TEST(BatchLoaderTest, DiscardDropsTheRemainder) {
  BatchLoader loader(std::make_shared<CountingDataset>(10), SplitSampler(10), options_with(4, LastBatch::kDiscard));
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  const std::vector<Indices> expected{{0, 1, 2, 3}, {4, 5, 6, 7}};
  EXPECT_EQ(read_epoch(loader, 0), expected);
  EXPECT_EQ(read_epoch(loader, 1), expected);
}

TEST(BatchLoaderTest, RolloverCarriesLeftoversIntoTheNextEpoch) {
  BatchLoader loader(std::make_shared<CountingDataset>(10), SplitSampler(10), options_with(4, LastBatch::kRollover));
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  EXPECT_EQ(read_epoch(loader, 0), (std::vector<Indices>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // 8 and 9 lead epoch 1, which then has 12 samples: 3 full batches.
  EXPECT_EQ(read_epoch(loader, 1), (std::vector<Indices>{{8, 9, 0, 1}, {2, 3, 4, 5}, {6, 7, 8, 9}}));
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  // Nothing was left over from epoch 1.
  EXPECT_EQ(read_epoch(loader, 2), (std::vector<Indices>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(BatchLoaderTest, RolloverDropsLeftoversOfAnAbandonedEpoch) {
  BatchLoader loader(std::make_shared<CountingDataset>(10), SplitSampler(10), options_with(4, LastBatch::kRollover));
  loader.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(read_epoch(loader, 1), (std::vector<Indices>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(BatchLoaderTest, BatchesFollowTheSamplersShuffledPart) {
  const auto dataset = std::make_shared<CountingDataset>(50);
  std::set<int64_t> seen;
  for (int64_t part = 0; part < 2; ++part) {
    const SplitSampler sampler(50, 2, part, /*shuffle=*/true, /*seed=*/99);
    BatchLoader loader(dataset, sampler, options_with(7, LastBatch::kKeep));
    EXPECT_EQ(loader.batches_per_epoch(), 4);
    Indices flat;
    for (const Indices& batch : read_epoch(loader, 3)) flat.insert(flat.end(), batch.begin(), batch.end());
    EXPECT_EQ(flat, sampler.epoch_indices(3));
    seen.insert(flat.begin(), flat.end());
  }
  EXPECT_EQ(seen.size(), 50u);
}

TEST(BatchLoaderTest, NormalisesPixelsIntoFloatBatches) {
  const auto dataset = std::make_shared<CountingDataset>(256);
  const float mean = 0.2860f;
  const float std = 0.3530f;
  BatchLoader loader(dataset, SplitSampler(256), options_with(256, LastBatch::kKeep, mean, std));
  loader.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(batch.images.shape(), core::Shape({256, 1, 2, 2}));
  EXPECT_EQ(batch.images.dtype(), DType::kFloat32);
  EXPECT_EQ(batch.labels.shape(), core::Shape({256}));
  EXPECT_EQ(batch.labels.dtype(), DType::kInt32);
  const float* images = batch.images.data_as<float>();
  for (int v = 0; v < 256; ++v) {
    const double expected = (v / 255.0 - mean) / std;
    for (int p = 0; p < 4; ++p) ASSERT_NEAR(images[v * 4 + p], expected, 1e-5) << "pixel value " << v;
  }
  EXPECT_NEAR(images[0], -0.8102, 1e-4);         // black
  EXPECT_NEAR(images[255 * 4], 2.0227, 1e-4);    // white
  EXPECT_FALSE(loader.next(batch));

  // mean 0, std 1: plain x / 255.
  BatchLoader plain(dataset, SplitSampler(256), options_with(256, LastBatch::kKeep, 0.0f, 1.0f));
  plain.start_epoch(0);
  ASSERT_TRUE(plain.next(batch));
  for (int v = 0; v < 256; ++v) ASSERT_FLOAT_EQ(batch.images.data_as<float>()[v * 4], v / 255.0f);
}

TEST(BatchLoaderTest, DefaultsAreFashionMnistStatistics) {
  const LoaderOptions options;
  EXPECT_EQ(options.mean, 0.2860f);
  EXPECT_EQ(options.std, 0.3530f);
  EXPECT_EQ(options.prefetch, 2);
  EXPECT_EQ(options.last_batch, LastBatch::kKeep);
}

TEST(BatchLoaderTest, HeldBatchesStayIntactWhileLaterOnesArePrepared) {
  BatchLoader loader(std::make_shared<CountingDataset>(40), SplitSampler(40), options_with(4, LastBatch::kKeep));
  loader.start_epoch(0);
  std::vector<Batch> held(10);
  for (Batch& batch : held) ASSERT_TRUE(loader.next(batch));
  for (int64_t b = 0; b < 10; ++b) {
    for (int64_t i = 0; i < 4; ++i) {
      const int64_t sample = 4 * b + i;
      EXPECT_EQ(held[b].labels.data_as<int32_t>()[i], sample);
      EXPECT_FLOAT_EQ(held[b].images.data_as<float>()[i * 4 + 3], sample / 255.0f);
    }
  }
}

TEST(BatchLoaderTest, RestartingMidEpochBeginsTheNewEpochAtItsStart) {
  BatchLoader loader(std::make_shared<CountingDataset>(100), SplitSampler(100, 1, 0, true, 3),
                     options_with(10, LastBatch::kKeep));
  loader.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  ASSERT_TRUE(loader.next(batch));
  const std::vector<Indices> epoch1 = read_epoch(loader, 1);
  ASSERT_EQ(epoch1.size(), 10u);
  Indices flat;
  for (const Indices& b : epoch1) flat.insert(flat.end(), b.begin(), b.end());
  EXPECT_EQ(flat, SplitSampler(100, 1, 0, true, 3).epoch_indices(1));
}

TEST(BatchLoaderTest, EndOfEpochAndMisuse) {
  BatchLoader loader(std::make_shared<CountingDataset>(4), SplitSampler(4), options_with(4, LastBatch::kKeep));
  Batch batch;
  EXPECT_EQ(thrown_by([&] { loader.next(batch); }).code, ErrorCode::kBadState);
  EXPECT_EQ(thrown_by([&] { loader.start_epoch(-1); }).code, ErrorCode::kInvalidArgument);
  loader.start_epoch(0);
  EXPECT_TRUE(loader.next(batch));
  EXPECT_FALSE(loader.next(batch));
  EXPECT_FALSE(loader.next(batch));

  // A batch larger than the part: one short batch (keep) or none at all.
  BatchLoader big(std::make_shared<CountingDataset>(4), SplitSampler(4), options_with(64, LastBatch::kDiscard));
  EXPECT_EQ(big.batches_per_epoch(), 0);
  big.start_epoch(0);
  EXPECT_FALSE(big.next(batch));
}

TEST(BatchLoaderTest, WorkerExceptionsReachTheConsumerInOrder) {
  // Sample 5 fails: batch 0 (samples 0-3) arrives, batch 1 throws.
  BatchLoader loader(std::make_shared<CountingDataset>(12, 0us, 5), SplitSampler(12),
                     options_with(4, LastBatch::kKeep));
  loader.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(batch.labels.data_as<int32_t>()[3], 3);
  const testing::Thrown first = thrown_by([&] { loader.next(batch); });
  EXPECT_EQ(first.code, ErrorCode::kIo);
  EXPECT_EQ(first.message, "sample 5 is corrupt");
  EXPECT_EQ(thrown_by([&] { loader.next(batch); }).code, ErrorCode::kIo) << "the epoch stays failed";
  // A new epoch starts clean and fails at the same place again.
  loader.start_epoch(1);
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(thrown_by([&] { loader.next(batch); }).code, ErrorCode::kIo);
}

// Distinct pixels per sample, channel, row and column, so that crops and
// flips show; reads take 0-300 us by index, so that several workers finish
// their batches out of order.
class JitteryImages final : public Dataset {
 public:
  int64_t size() const override { return 61; }
  core::Shape sample_shape() const override { return {3, 8, 8}; }
  int32_t read_sample(int64_t index, uint8_t* pixels) const override {
    std::this_thread::sleep_for(std::chrono::microseconds((index * 37) % 4 * 100));
    for (int64_t i = 0; i < 3 * 8 * 8; ++i) pixels[i] = static_cast<uint8_t>(index * 7 + i);
    return static_cast<int32_t>(index % 10);
  }
};

TEST(BatchLoaderTest, BatchesAreTheSameWhateverTheNumberOfWorkers) {
  const auto dataset = std::make_shared<JitteryImages>();
  // Part 1 of 2, shuffled, with rollover, so that the order, the part and
  // the carried samples all go through the workers.
  const SplitSampler sampler(dataset->size(), 2, 1, true, 42);
  auto epochs_with = [&](int workers) {
    LoaderOptions options = options_with(4, LastBatch::kRollover, 0.5f, 0.25f);
    options.num_workers = workers;
    options.prefetch = 1;
    options.augmentation.crop_padding = 2;
    options.augmentation.horizontal_flip = true;
    options.augment_seed = 9;
    BatchLoader loader(dataset, sampler, options);
    std::vector<std::vector<float>> images;
    std::vector<Indices> labels;
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      loader.start_epoch(epoch);
      Batch batch;
      while (loader.next(batch)) {
        const float* x = batch.images.data_as<float>();
        images.emplace_back(x, x + batch.images.shape().numel());
        const int32_t* y = batch.labels.data_as<int32_t>();
        labels.emplace_back(y, y + batch.size());
      }
    }
    return std::make_pair(images, labels);
  };
  const auto one = epochs_with(1);
  ASSERT_EQ(one.first.size(), 22u);  // 30 or 31 samples a part, rollover: 7 + 8 + 7 batches of 4
  for (int workers : {2, 5, 16}) {
    const auto many = epochs_with(workers);
    EXPECT_EQ(many.second, one.second) << workers << " workers";
    EXPECT_EQ(many.first, one.first) << workers << " workers";
  }
  // And the automatic count yields them too.
  EXPECT_EQ(epochs_with(0).first, one.first);
}

TEST(BatchLoaderTest, SeveralWorkersDeliverTheBatchesBeforeAFailure) {
  // Sample 13 fails: batch 3 of 4. Four workers start batches 0-3 at once,
  // and may well finish batch 4 or 5 before 0; batches 0-2 still come
  // first, then the failure, never a later batch.
  BatchLoader loader(std::make_shared<CountingDataset>(24, 300us, 13), SplitSampler(24), [] {
    LoaderOptions options = options_with(4, LastBatch::kKeep);
    options.num_workers = 4;
    return options;
  }());
  loader.start_epoch(0);
  Batch batch;
  for (int32_t b = 0; b < 3; ++b) {
    ASSERT_TRUE(loader.next(batch));
    EXPECT_EQ(batch.labels.data_as<int32_t>()[0], 4 * b);
  }
  const testing::Thrown failed = thrown_by([&] { loader.next(batch); });
  EXPECT_EQ(failed.code, ErrorCode::kIo);
  EXPECT_EQ(failed.message, "sample 13 is corrupt");
  EXPECT_EQ(thrown_by([&] { loader.next(batch); }).code, ErrorCode::kIo) << "the epoch stays failed";
}

TEST(BatchLoaderTest, DestructionNeverHangsNorLeavesAThread) {
  // Three moments to destroy a loader: before any epoch (worker idle),
  // with the prefetch queue full (worker waiting for room), and while the
  // worker is inside a slow batch (100 samples of 2 ms each).
  struct Scenario {
    const char* name;
    std::chrono::microseconds delay;
    int consume;          // batches taken before destruction; -1: no epoch started
    int64_t reads_begun;  // then the moment to destroy: the worker has begun this many reads
  };
  // Batches of 100, prefetch 2: after one batch is taken the queue is full at
  // 300 reads; the 101st read is inside the second batch.
  for (const Scenario& scenario : {Scenario{"idle", 0us, -1, 0}, Scenario{"queue full", 0us, 1, 300},
                                   Scenario{"mid batch", 2000us, 1, 101}}) {
    auto threads_after = std::make_shared<std::atomic<int>>(-1);
    auto threads_before = std::make_shared<std::atomic<int>>(-1);
    const bool finished = testing::finishes_within(10s, [scenario, threads_before, threads_after] {
      *threads_before = testing::thread_count();
      {
        const auto dataset = std::make_shared<CountingDataset>(1000, scenario.delay);
        BatchLoader loader(dataset, SplitSampler(1000), options_with(100, LastBatch::kKeep));
        if (scenario.consume >= 0) {
          loader.start_epoch(0);
          Batch batch;
          for (int i = 0; i < scenario.consume; ++i) loader.next(batch);
          const auto reached = std::chrono::steady_clock::now() + 5s;
          while (dataset->reads_begun() < scenario.reads_begun && std::chrono::steady_clock::now() < reached) {
            std::this_thread::sleep_for(1ms);
          }
          EXPECT_GE(dataset->reads_begun(), scenario.reads_begun) << scenario.name << ": the worker never got there";
        }
      }
      // A joined thread can linger in /proc for a moment after join returns.
      const auto deadline = std::chrono::steady_clock::now() + 2s;
      int now = testing::thread_count();
      while (now > *threads_before && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);
        now = testing::thread_count();
      }
      *threads_after = now;
    });
    ASSERT_TRUE(finished) << scenario.name << ": the loader's destructor did not return within 10 s";
    EXPECT_LE(threads_after->load(), threads_before->load()) << scenario.name << ": a thread was left behind";
  }
}

TEST(BatchLoaderTest, RejectsBadArguments) {
  const auto dataset = std::make_shared<CountingDataset>(10);
  const SplitSampler sampler(10);
  auto code_for = [&](const LoaderOptions& options) {
    return thrown_by([&] { BatchLoader(dataset, sampler, options); }).code;
  };
  EXPECT_EQ(code_for(options_with(0, LastBatch::kKeep)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_for(options_with(4, LastBatch::kKeep, 0.0f, 0.0f)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_for(options_with(4, LastBatch::kKeep, 0.0f, -1.0f)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_for(options_with(4, LastBatch::kKeep, NAN, 1.0f)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_for(options_with(4, LastBatch::kKeep, 0.0f, INFINITY)), ErrorCode::kInvalidArgument);
  LoaderOptions no_prefetch = options_with(4, LastBatch::kKeep);
  no_prefetch.prefetch = 0;
  EXPECT_EQ(code_for(no_prefetch), ErrorCode::kInvalidArgument);
  LoaderOptions negative_workers = options_with(4, LastBatch::kKeep);
  negative_workers.num_workers = -1;
  EXPECT_EQ(code_for(negative_workers), ErrorCode::kInvalidArgument);
  EXPECT_EQ(thrown_by([&] { BatchLoader(nullptr, sampler); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(thrown_by([&] { BatchLoader(dataset, SplitSampler(11)); }).code, ErrorCode::kInvalidArgument);
}

TEST(BatchLoaderTest, FashionMnistPartsNormaliseToZeroMeanUnitVariance) {
  if (!testing::fashion_mnist_present()) {
    FAIL() << "Fashion-MNIST is not installed at " << testing::kFashionMnistDir
           << " (scripts/install-deps.sh installs the Debian package dataset-fashion-mnist)";
  }
  const auto train = std::make_shared<MnistDataset>(
      MnistDataset::from_directory(testing::kFashionMnistDir, MnistSplit::kTrain));
  double sum = 0;
  double sum_squares = 0;
  int64_t pixels = 0;
  std::set<int32_t> classes;
  for (int64_t part = 0; part < 2; ++part) {
    LoaderOptions options;
    options.batch_size = 1000;
    BatchLoader loader(train, SplitSampler(train->size(), 2, part, true, 11), options);
    EXPECT_EQ(loader.batches_per_epoch(), 30);
    loader.start_epoch(0);
    Batch batch;
    int64_t batches = 0;
    while (loader.next(batch)) {
      ++batches;
      ASSERT_EQ(batch.images.shape(), core::Shape({1000, 1, 28, 28}));
      const float* x = batch.images.data_as<float>();
      for (size_t i = 0; i < batch.images.size(); ++i) {
        sum += x[i];
        sum_squares += double{x[i]} * x[i];
      }
      pixels += static_cast<int64_t>(batch.images.size());
      classes.insert(batch.labels.data_as<int32_t>(), batch.labels.data_as<int32_t>() + batch.size());
    }
    EXPECT_EQ(batches, 30);
  }
  const double mean = sum / static_cast<double>(pixels);
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(sum_squares / static_cast<double>(pixels) - mean * mean), 1.0, 0.01);
  EXPECT_EQ(classes.size(), 10u);
}

}  // namespace
}  // namespace dt::data
