// What every part's rounds on one server follow: the job's mode (dist_sync
// or dist_async, declared by the workers' inits), the server-side optimizer
// (update_on_kvstore) and the compression of dist_sync pulls, with the
// residuals their encodings leave (ServerKeyStore states the semantics).
// The parts' round machines (PartRounds) read it when a round applies.
//
// Threading: any thread. The settings have their own lock; a part's
// residual is touched only with that part's lock held.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "optim/optimizer.h"
#include "ps/compression/error_feedback.h"
#include "ps/compression/gradient_codec.h"
#include "ps/server/work_clock.h"

namespace dt::ps {

enum class StoreMode { kSync, kAsync };

class RoundRules {
 public:
  // Once per store: a different mode later is Error(kBadState) (workers of
  // one job disagree on dist_sync / dist_async).
  void set_mode(StoreMode mode);
  // Error(kBadState) before any worker declared one.
  StoreMode mode() const;
  // False before any mode is declared.
  bool is_sync() const { return mode_.load() == static_cast<int>(StoreMode::kSync); }

  // False when config is the optimizer in force already (every worker
  // sends it); otherwise replaces the optimizer and its state.
  bool set_optimizer(const optim::OptimizerConfig& config);
  // Null without an optimizer.
  std::shared_ptr<optim::Optimizer> optimizer() const;
  // Mode none (or a lossless one): pulls go in full.
  void set_compression(const compression::CompressionConfig& config);
  // Null without a lossy compression.
  std::shared_ptr<const compression::GradientCodec> codec() const;

  // Per part, what its pulls' encodings did not send.
  compression::ErrorFeedback& pull_feedback() { return pull_feedback_; }
  const compression::ErrorFeedback& pull_feedback() const { return pull_feedback_; }
  // The residuals and encodings of parts whose pulls are compressed: kept
  // apart from the store's other memory, which a round (with its part
  // locked) must not lock.
  std::atomic<uint64_t>& compression_bytes() { return compression_bytes_; }
  uint64_t compression_bytes() const { return compression_bytes_.load(); }

  // Where the server's time goes (dtrun's live job summary): null, the
  // default, for off. Set before any request is handled (run_server).
  void set_work_clock(WorkClock* clock) { work_clock_ = clock; }
  // A round's sum, update or encoding: counted as computing when on.
  WorkClock::Section computing() const { return WorkClock::Section(work_clock_, WorkClock::Activity::kComputing); }

 private:
  // -1 until declared, then a StoreMode. Atomic: read on every call, set once.
  std::atomic<int> mode_{-1};
  mutable std::mutex mutex_;  // guards optimizer_ and codec_
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::shared_ptr<const compression::GradientCodec> codec_;
  compression::ErrorFeedback pull_feedback_;
  std::atomic<uint64_t> compression_bytes_{0};
  WorkClock* work_clock_ = nullptr;
};

}  // namespace dt::ps
