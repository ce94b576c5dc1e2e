#include "data/batch_stager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/split_sampler.h"
#include "counting_dataset.h"

namespace dt::data {
namespace {

using core::ErrorCode;
using testing::CountingDataset;
using namespace std::chrono_literals;

constexpr int64_t kSamplePixels = 4;  // CountingDataset's (1, 2, 2)

LoaderOptions plain(int64_t batch_size, int workers = 4) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = workers;
  options.prefetch = 3;
  options.mean = 0.0f;
  options.std = 1.0f;
  return options;
}

// Whether row r of the batch holds sample labels[r] (CountingDataset: every
// pixel the label % 256), normalised by mean 0 and std 1.
bool rows_match_labels(const Batch& batch) {
  const float* images = batch.images.data_as<float>();
  const int32_t* labels = batch.labels.data_as<int32_t>();
  for (int64_t r = 0; r < batch.size(); ++r) {
    for (int64_t p = 0; p < kSamplePixels; ++p) {
      const float want = static_cast<float>(labels[r] % 256) / 255.0f;
      if (images[r * kSamplePixels + p] != want) return false;
    }
  }
  return true;
}

std::vector<int32_t> labels_of(const Batch& batch) {
  const int32_t* labels = batch.labels.data_as<int32_t>();
  return std::vector<int32_t>(labels, labels + batch.size());
}

std::shared_ptr<core::Context> cpu() { return core::make_cpu_context(); }

TEST(BatchStagerTest, DeliversTheLoadersBatchesOnceInOrderWithTheirLabels) {
  const auto dataset = std::make_shared<CountingDataset>(203, 50us);
  const SplitSampler sampler(203, 1, 0, /*shuffle=*/true, /*seed=*/5);
  BatchLoader reference(dataset, sampler, plain(16, 1));
  BatchLoader staged_loader(dataset, sampler, plain(16, 4));
  BatchStager stager(staged_loader, cpu());
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    reference.start_epoch(epoch);
    stager.start_epoch(epoch);
    Batch want, got;
    int64_t batches = 0;
    while (reference.next(want)) {
      ASSERT_TRUE(stager.next(got)) << "batch " << batches << " of epoch " << epoch;
      EXPECT_EQ(got.images.shape(), want.images.shape());
      EXPECT_EQ(labels_of(got), labels_of(want)) << "batch " << batches;
      ASSERT_EQ(got.images.nbytes(), want.images.nbytes());
      EXPECT_EQ(std::memcmp(got.images.data(), want.images.data(), want.images.nbytes()), 0) << "batch " << batches;
      EXPECT_TRUE(rows_match_labels(got));
      EXPECT_EQ(stager.last_slot(), static_cast<size_t>(batches) % BatchStager::kSlots);
      ++batches;
    }
    EXPECT_EQ(batches, 13);  // 12 of 16 and one of 11
    EXPECT_FALSE(stager.next(got));
    EXPECT_FALSE(got.images.defined());
    EXPECT_FALSE(stager.next(got));
  }
  EXPECT_FALSE(stager.pinned());
}

TEST(BatchStagerTest, ABatchTheConsumerHoldsIsNeverOverwritten) {
  BatchLoader loader(std::make_shared<CountingDataset>(64), SplitSampler(64), plain(8));
  BatchStager stager(loader, cpu());
  stager.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(stager.next(batch));
  const Batch held = batch;  // batch 0, in slot 0
  const std::vector<float> bytes(held.images.data_as<float>(), held.images.data_as<float>() + held.images.size());
  // Batches 1..5 pass through both slots, slot 0 twice more.
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(stager.next(batch));
    EXPECT_EQ(labels_of(batch)[0], 8 * i);
    EXPECT_NE(batch.images.data(), held.images.data()) << "batch " << i << " was staged over a held batch";
  }
  EXPECT_EQ(labels_of(held), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(std::memcmp(held.images.data_as<float>(), bytes.data(), bytes.size() * sizeof(float)), 0);
  EXPECT_TRUE(rows_match_labels(held));
}

TEST(BatchStagerTest, ASlotComesBackToTheSameArraysWhenTheConsumerLetsGo) {
  BatchLoader loader(std::make_shared<CountingDataset>(64), SplitSampler(64), plain(8));
  BatchStager stager(loader, cpu());
  stager.start_epoch(0);
  Batch batch;
  std::vector<const void*> addresses;
  while (stager.next(batch)) addresses.push_back(batch.images.data());
  ASSERT_EQ(addresses.size(), 8u);
  // Double buffering: two arrays in turn, no new ones per batch.
  EXPECT_NE(addresses[0], addresses[1]);
  for (size_t i = 2; i < addresses.size(); ++i) EXPECT_EQ(addresses[i], addresses[i % 2]) << "batch " << i;
}

TEST(BatchStagerTest, ALoadersErrorComesAfterTheBatchesBeforeItAndStaysUntilTheNextEpoch) {
  // Sample 21 is in batch 2 (rows 16..23).
  BatchLoader loader(std::make_shared<CountingDataset>(40, 0us, 21), SplitSampler(40), plain(8));
  BatchStager stager(loader, cpu());
  stager.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(stager.next(batch));
  ASSERT_TRUE(stager.next(batch));
  EXPECT_EQ(labels_of(batch)[0], 8);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      stager.next(batch);
      ADD_FAILURE() << "batch 2 holds the unreadable sample";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(std::string(e.what()).find("sample 21 is corrupt"), std::string::npos) << e.what();
    }
  }
  // A new epoch starts afresh (and fails at the same batch again).
  stager.start_epoch(1);
  ASSERT_TRUE(stager.next(batch));
  EXPECT_EQ(labels_of(batch)[0], 0);
}

TEST(BatchStagerTest, RefusesMisuse) {
  BatchLoader loader(std::make_shared<CountingDataset>(8), SplitSampler(8), plain(4));
  try {
    BatchStager stager(loader, nullptr);
    ADD_FAILURE() << "a null target was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  BatchStager stager(loader, cpu());
  Batch batch;
  try {
    stager.next(batch);
    ADD_FAILURE() << "next before start_epoch";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadState);
  }
  try {
    stager.start_epoch(-1);
    ADD_FAILURE() << "a negative epoch was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  // The failed start left no epoch to wait on.
  EXPECT_THROW(stager.next(batch), core::Error);
}

TEST(BatchStagerTest, AbandoningAnEpochOrTheStagerMidwayEndsPromptly) {
  const auto dataset = std::make_shared<CountingDataset>(400, 200us);
  auto finished = std::async(std::launch::async, [&] {
    BatchLoader loader(dataset, SplitSampler(400), plain(10, 2));
    BatchStager stager(loader, cpu());
    stager.start_epoch(0);
    Batch batch;
    if (!stager.next(batch)) return std::string("epoch 0 was empty");
    stager.start_epoch(1);  // abandons epoch 0 with both slots busy
    if (!stager.next(batch) || labels_of(batch)[0] != 0) return std::string("epoch 1 did not start at sample 0");
    if (!stager.next(batch) || labels_of(batch)[0] != 10) return std::string("epoch 1's second batch is wrong");
    return std::string();  // the stager goes mid-epoch
  });
  ASSERT_EQ(finished.wait_for(30s), std::future_status::ready) << "the stager hung";
  EXPECT_EQ(finished.get(), "");
}

}  // namespace
}  // namespace dt::data
