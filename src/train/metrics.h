// Classification metrics accumulated over an epoch.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/ndarray.h"
#include "core/traffic.h"
#include "train/metrics_log.h"

namespace dt::train {

// Seconds from start until now on the steady clock: a step's or an epoch's time.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Rows of logits (N, classes) whose arg-max equals the int32/int64 label.
// Either array may be on a GPU: it is copied to the host first.
int64_t count_correct(const core::NDArray& logits, const core::NDArray& labels);

// Sums of a stream of batches: the epoch's mean loss and accuracy.
class EpochMetrics {
 public:
  // mean_loss is the batch's mean over its samples.
  void add(double mean_loss, int64_t correct, int64_t samples) {
    loss_sum_ += mean_loss * static_cast<double>(samples);
    correct_ += correct;
    samples_ += samples;
  }
  int64_t samples() const { return samples_; }
  double mean_loss() const { return samples_ > 0 ? loss_sum_ / static_cast<double>(samples_) : 0.0; }
  double accuracy() const {
    return samples_ > 0 ? static_cast<double>(correct_) / static_cast<double>(samples_) : 0.0;
  }
  // The record the metrics log writes for epoch (1-based) from these sums:
  // the epoch took seconds, compute_seconds of them in forward/backward,
  // and the kvstore moved `moved` (zero without one). No test accuracy.
  EpochRecord record(int epoch, double seconds, double compute_seconds, const core::Traffic& moved) const;

 private:
  double loss_sum_ = 0.0;
  int64_t correct_ = 0;
  int64_t samples_ = 0;
};

}  // namespace dt::train
