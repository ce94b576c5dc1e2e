// Turns a dataset and a split sampler into normalised float batches, with
// worker threads that read, decode and augment the next batches while the
// trainer computes on the current one (Gluon's DataLoader with its
// num_workers, prefetch and last_batch).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/ndarray.h"
#include "data/augmentation.h"
#include "data/dataset.h"
#include "data/split_sampler.h"

namespace dt::data {

// What happens to the samples that do not fill the last batch of an epoch.
enum class LastBatch {
  kKeep,      // they form a smaller last batch
  kDiscard,   // they are skipped this epoch
  kRollover,  // they lead the first batch of the next epoch
};

struct LoaderOptions {
  int64_t batch_size = 64;
  LastBatch last_batch = LastBatch::kKeep;
  // Batches prepared ahead of the consumer; at least 1.
  int prefetch = 2;
  // Threads that prepare batches, each a whole batch at a time; 0: half the
  // CPUs this process may use, at least 1 and at most 4 (a few threads keep
  // up with decoding; more would take cores from the step's kernels). Up to
  // max(prefetch, num_workers) batches are in preparation or ready. The
  // batches do not depend on it: every random draw is keyed by the sample's
  // position in the epoch, not by the thread that makes it.
  int num_workers = 0;
  // Pixels become (x / 255 - mean) / std. The defaults are the Fashion-MNIST
  // training set's statistics; mean 0, std 1 leaves x / 255.
  float mean = 0.2860f;
  float std = 0.3530f;
  // Per-channel statistics instead, one entry per channel (dim 0 of the
  // dataset's sample shape), e.g. CifarDataset::kMean and kStd. Empty (both):
  // mean and std above for every channel.
  std::vector<float> channel_mean;
  std::vector<float> channel_std;
  // Random transforms on the worker threads, before normalisation; they
  // need (C, H, W) samples. The loader of part k of the sampler draws from
  // stream augment_seed + k, so the workers of a job that share one seed
  // augment differently, and every run with that seed the same.
  Augmentation augmentation;
  uint64_t augment_seed = 0;
};

// One batch of B samples. The arrays are allocated for this batch alone and
// the loader keeps no reference to them: the consumer owns them and may hold
// them for as long as it likes, also while later batches are prepared.
// (A BatchStager, data/batch_stager.h, delivers them on its target context
// instead, under the same promise.)
struct Batch {
  core::NDArray images;  // (B, C, H, W) float32 on the CPU
  core::NDArray labels;  // (B) int32 on the CPU
  int64_t size() const { return labels.defined() ? labels.shape()[0] : 0; }
};

// Not thread-safe: one consumer thread calls its members. The worker
// threads are owned by the loader and joined by its destructor, which never
// waits longer than the dataset takes to read one sample.
class BatchLoader {
 public:
  // The loader shares ownership of the dataset, which its threads read.
  // Error(kInvalidArgument) for a null dataset, a sampler whose length is not
  // the dataset's size, batch_size < 1, prefetch < 1, num_workers < 0, a
  // mean or std that is not finite (std must also be > 0), per-channel
  // statistics whose counts are not the dataset's channels, or an
  // augmentation on samples that are not (C, H, W) or a crop_padding
  // outside [0, min(H, W)], or a random resized crop on a dataset without
  // source images or with a scale range outside (0, 1] or a ratio range
  // outside (0, inf).
  BatchLoader(std::shared_ptr<const Dataset> dataset, const SplitSampler& sampler,
              const LoaderOptions& options = {});
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Begins `epoch` (Error(kInvalidArgument) when negative): the batches
  // follow sampler.epoch_indices(epoch), preceded under kRollover by the
  // samples left over from the last epoch that was read to its end. Calling
  // it mid-epoch abandons the rest of that epoch and its leftovers, as
  // breaking out of a Gluon DataLoader loop does.
  void start_epoch(int64_t epoch);

  // The epoch's next batch into `out`; false once the epoch is exhausted
  // (and on every later call until start_epoch). Rethrows an exception that
  // preparing this batch raised in a worker thread; the epoch then stays
  // failed until start_epoch. Error(kBadState) before the first start_epoch.
  bool next(Batch& out);

  // How many batches next() yields in the epoch begun by the last
  // start_epoch, or, before the first, in the first epoch. Under kRollover
  // this includes the leftovers carried into that epoch.
  int64_t batches_per_epoch() const;

  // The shape of one sample (a batch's dims after the first) and the most
  // rows a batch has: what a consumer sizes its buffers by.
  const core::Shape& sample_shape() const { return sample_shape_; }
  int64_t batch_size() const { return options_.batch_size; }

 private:
  int64_t count_batches(int64_t samples) const;
  bool can_produce() const;
  void run_worker();
  void stop_workers();
  // Records the failure of batch `number` unless an earlier batch failed
  // already; under mutex_.
  void record_failure(std::exception_ptr error, int64_t number);
  std::optional<Batch> assemble(const int64_t* indices, int64_t count, int64_t epoch, int64_t position,
                                uint64_t generation) const;

  const std::shared_ptr<const Dataset> dataset_;
  const SplitSampler sampler_;
  const LoaderOptions options_;
  const core::Shape sample_shape_;
  const std::shared_ptr<core::Context> cpu_;
  const int num_workers_;  // options_.num_workers resolved
  // Per channel, (v / 255 - mean) / std for every byte value, so the hot
  // loop is one load.
  std::vector<std::array<float, 256>> normalised_;
  const uint64_t augment_stream_;

  mutable std::mutex mutex_;
  std::condition_variable producer_cv_;  // wakes the workers: room in the queue, a new epoch, stop
  std::condition_variable consumer_cv_;  // wakes next(): a batch or an error arrived

  // Written under mutex_; atomic as well so that a worker can notice an
  // abandoned epoch or shutdown between samples without taking the lock.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};

  // The epoch in progress, guarded by mutex_. order_ is shared with the
  // workers, which read their slices without the lock.
  bool epoch_started_ = false;
  bool epoch_finished_ = false;
  int64_t epoch_ = 0;
  std::shared_ptr<const std::vector<int64_t>> order_;
  int64_t total_batches_ = 0;
  int64_t produced_ = 0;
  int64_t consumed_ = 0;
  // Finished batches by their number in the epoch: workers finish out of
  // order, next() hands them out in order.
  std::map<int64_t, Batch> ready_;
  // The first failure, by the number of the batch it failed; the batches
  // before it are still delivered.
  std::exception_ptr error_;
  int64_t error_batch_ = 0;
  std::vector<int64_t> carry_;  // kRollover leftovers for the next epoch

  std::vector<std::thread> workers_;
};

}  // namespace dt::data
