// A dataset whose batches say what they hold, for the loader's and the
// stager's tests: sample i has label i and every pixel equal to i % 256.
// Optionally slow, or failing at one index; counts the reads it has begun,
// so a test can wait for a loader's worker to reach a point.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "core/error.h"
#include "data/dataset.h"

namespace dt::data::testing {

class CountingDataset final : public Dataset {
 public:
  explicit CountingDataset(int64_t size, std::chrono::microseconds delay = std::chrono::microseconds(0),
                           int64_t fail_at = -1)
      : size_(size), delay_(delay), fail_at_(fail_at) {}
  int64_t size() const override { return size_; }
  core::Shape sample_shape() const override { return {1, 2, 2}; }
  int64_t reads_begun() const { return reads_begun_; }
  int32_t read_sample(int64_t index, uint8_t* pixels) const override {
    ++reads_begun_;
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    if (index == fail_at_) throw core::Error(core::ErrorCode::kIo, "sample " + std::to_string(index) + " is corrupt");
    std::memset(pixels, static_cast<int>(index % 256), 4);
    return static_cast<int32_t>(index);
  }

 private:
  int64_t size_;
  std::chrono::microseconds delay_;
  int64_t fail_at_;
  mutable std::atomic<int64_t> reads_begun_{0};
};

}  // namespace dt::data::testing
