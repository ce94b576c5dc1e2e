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

namespace dt::data {
namespace {

using core::ErrorCode;
using namespace std::chrono_literals;

// Sample i has label i and pixel p equal to (3 * i + p) % 256, so that a row
// of a batch tells which sample it is and whether it sits beside its own
// label. Optionally slow, or failing at one index.
class NumberedDataset final : public Dataset {
 public:
  explicit NumberedDataset(int64_t size, std::chrono::microseconds delay = 0us, int64_t fail_at = -1)
      : size_(size), delay_(delay), fail_at_(fail_at) {}
  int64_t size() const override { return size_; }
  core::Shape sample_shape() const override { return {3, 4, 4}; }
  int32_t read_sample(int64_t index, uint8_t* pixels) const override {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    if (index == fail_at_) throw core::Error(ErrorCode::kIo, "sample " + std::to_string(index) + " is unreadable");
    for (int p = 0; p < 48; ++p) pixels[p] = static_cast<uint8_t>((3 * index + p) % 256);
    return static_cast<int32_t>(index);
  }

 private:
  int64_t size_;
  std::chrono::microseconds delay_;
  int64_t fail_at_;
};

constexpr int64_t kSamplePixels = 48;

LoaderOptions plain(int64_t batch_size, int workers = 4) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = workers;
  options.prefetch = 3;
  options.mean = 0.0f;
  options.std = 1.0f;
  return options;
}

// Whether row r of the batch holds sample labels[r]: its pixels, normalised
// by mean 0 and std 1.
bool rows_match_labels(const Batch& batch) {
  const float* images = batch.images.data_as<float>();
  const int32_t* labels = batch.labels.data_as<int32_t>();
  for (int64_t r = 0; r < batch.size(); ++r) {
    for (int64_t p = 0; p < kSamplePixels; ++p) {
      const float want = static_cast<float>((3 * labels[r] + p) % 256) / 255.0f;
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
  const auto dataset = std::make_shared<NumberedDataset>(203, 50us);
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
  BatchLoader loader(std::make_shared<NumberedDataset>(64), SplitSampler(64), plain(8));
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
  BatchLoader loader(std::make_shared<NumberedDataset>(64), SplitSampler(64), plain(8));
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
  BatchLoader loader(std::make_shared<NumberedDataset>(40, 0us, 21), SplitSampler(40), plain(8));
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
      EXPECT_NE(std::string(e.what()).find("sample 21"), std::string::npos) << e.what();
    }
  }
  // A new epoch starts afresh (and fails at the same batch again).
  stager.start_epoch(1);
  ASSERT_TRUE(stager.next(batch));
  EXPECT_EQ(labels_of(batch)[0], 0);
}

TEST(BatchStagerTest, RefusesMisuse) {
  BatchLoader loader(std::make_shared<NumberedDataset>(8), SplitSampler(8), plain(4));
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
  const auto dataset = std::make_shared<NumberedDataset>(400, 200us);
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
