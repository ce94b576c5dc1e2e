#include "data/batch_loader.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/timeline/timeline.h"

namespace dt::data {

namespace {

using core::ErrorCode;

const Dataset& checked(const std::shared_ptr<const Dataset>& dataset) {
  core::require(dataset != nullptr, ErrorCode::kInvalidArgument, "the batch loader needs a dataset, got null");
  return *dataset;
}

// The CPUs this process may use: a container or a taskset may allow fewer
// than hardware_concurrency counts.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

int resolve_workers(int requested) {
  core::require(requested >= 0, ErrorCode::kInvalidArgument,
                "num_workers must be at least 0 (automatic), not " + std::to_string(requested));
  return requested > 0 ? requested : std::clamp(usable_cpus() / 2, 1, 4);
}

}  // namespace

BatchLoader::BatchLoader(std::shared_ptr<const Dataset> dataset, const SplitSampler& sampler,
                         const LoaderOptions& options)
    : dataset_(std::move(dataset)),
      sampler_(sampler),
      options_(options),
      sample_shape_(checked(dataset_).sample_shape()),
      cpu_(core::make_cpu_context()),
      num_workers_(resolve_workers(options.num_workers)),
      augment_stream_(options.augment_seed + static_cast<uint64_t>(sampler.part_index())) {
  core::require(sampler.length() == dataset_->size(), ErrorCode::kInvalidArgument,
                "the sampler covers " + std::to_string(sampler.length()) + " samples but the dataset has " +
                    std::to_string(dataset_->size()));
  core::require(options.batch_size >= 1, ErrorCode::kInvalidArgument,
                "batch_size must be at least 1, not " + std::to_string(options.batch_size));
  core::require(options.prefetch >= 1, ErrorCode::kInvalidArgument,
                "prefetch must be at least 1, not " + std::to_string(options.prefetch));
  const bool per_channel = !options.channel_mean.empty() || !options.channel_std.empty();
  // A scalar sample (ndim 0) is one channel.
  const size_t channels = sample_shape_.ndim() == 0 ? 1 : std::max<size_t>(1, static_cast<size_t>(sample_shape_[0]));
  if (per_channel) {
    core::require(options.channel_mean.size() == channels && options.channel_std.size() == channels,
                  ErrorCode::kInvalidArgument,
                  "per-channel statistics need one mean and one std per channel: the samples have " +
                      std::to_string(channels) + " channels, the options " +
                      std::to_string(options.channel_mean.size()) + " means and " +
                      std::to_string(options.channel_std.size()) + " stds");
  }
  normalised_.resize(per_channel ? channels : 1);
  for (size_t c = 0; c < normalised_.size(); ++c) {
    const float mean = per_channel ? options.channel_mean[c] : options.mean;
    const float deviation = per_channel ? options.channel_std[c] : options.std;
    const std::string which = per_channel ? " of channel " + std::to_string(c) : "";
    core::require(std::isfinite(mean), ErrorCode::kInvalidArgument, "the normalisation mean" + which + " is not finite");
    core::require(std::isfinite(deviation) && deviation > 0.0f, ErrorCode::kInvalidArgument,
                  "the normalisation std" + which + " must be finite and > 0, not " + std::to_string(deviation));
    for (size_t v = 0; v < normalised_[c].size(); ++v) {
      normalised_[c][v] = (static_cast<float>(v) / 255.0f - mean) / deviation;
    }
  }
  const Augmentation& augmentation = options.augmentation;
  if (augmentation.enabled()) {
    core::require(sample_shape_.ndim() == 3, ErrorCode::kInvalidArgument,
                  "augmentation needs (channels, height, width) samples, not " + sample_shape_.to_string());
    const int64_t side = std::min(sample_shape_[1], sample_shape_[2]);
    core::require(augmentation.crop_padding >= 0 && augmentation.crop_padding <= side, ErrorCode::kInvalidArgument,
                  "crop_padding must be in [0, " + std::to_string(side) + "] for samples of shape " +
                      sample_shape_.to_string() + ", not " + std::to_string(augmentation.crop_padding));
    if (augmentation.random_resized_crop) {
      core::require(dataset_->has_source_images(), ErrorCode::kInvalidArgument,
                    "random_resized_crop needs a dataset that resizes source images (an image folder)");
      const auto& scale = augmentation.resized_crop_scale;
      const auto& ratio = augmentation.resized_crop_ratio;
      core::require(std::isfinite(scale[0]) && std::isfinite(scale[1]) && scale[0] > 0.0 && scale[0] <= scale[1] &&
                        scale[1] <= 1.0,
                    ErrorCode::kInvalidArgument,
                    "the random resized crop's scale range must satisfy 0 < min <= max <= 1, not [" +
                        std::to_string(scale[0]) + ", " + std::to_string(scale[1]) + "]");
      core::require(std::isfinite(ratio[0]) && std::isfinite(ratio[1]) && ratio[0] > 0.0 && ratio[0] <= ratio[1],
                    ErrorCode::kInvalidArgument,
                    "the random resized crop's ratio range must satisfy 0 < min <= max, not [" +
                        std::to_string(ratio[0]) + ", " + std::to_string(ratio[1]) + "]");
    }
    // transform_image takes a table per channel.
    normalised_.resize(channels, normalised_.front());
  }
  // Started only now: had a check above thrown with a thread running, its
  // std::thread would have been destroyed joinable, which terminates.
  workers_.reserve(static_cast<size_t>(num_workers_));
  try {
    for (int i = 0; i < num_workers_; ++i) workers_.emplace_back(&BatchLoader::run_worker, this);
  } catch (...) {
    stop_workers();
    throw;
  }
}

BatchLoader::~BatchLoader() { stop_workers(); }

void BatchLoader::stop_workers() {
  {
    // Under the lock, so no worker can miss the wake-up between testing its
    // predicate and going to sleep.
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  producer_cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

int64_t BatchLoader::count_batches(int64_t samples) const {
  const int64_t full = samples / options_.batch_size;
  const bool partial = samples % options_.batch_size != 0;
  return options_.last_batch == LastBatch::kKeep && partial ? full + 1 : full;
}

void BatchLoader::start_epoch(int64_t epoch) {
  const std::vector<int64_t> indices = sampler_.epoch_indices(epoch);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Built before any state changes, so that a failed allocation leaves the
    // loader as it was.
    auto order = std::make_shared<std::vector<int64_t>>();
    order->reserve(carry_.size() + indices.size());
    order->insert(order->end(), carry_.begin(), carry_.end());
    order->insert(order->end(), indices.begin(), indices.end());

    carry_.clear();
    generation_.fetch_add(1);
    ready_.clear();
    error_ = nullptr;
    total_batches_ = count_batches(static_cast<int64_t>(order->size()));
    epoch_ = epoch;
    order_ = std::move(order);
    produced_ = 0;
    consumed_ = 0;
    epoch_started_ = true;
    epoch_finished_ = false;
  }
  producer_cv_.notify_all();
}

bool BatchLoader::next(Batch& out) {
  const core::timeline::Span wait("train", "data wait");
  std::unique_lock<std::mutex> lock(mutex_);
  core::require(epoch_started_, ErrorCode::kBadState, "BatchLoader::next called before start_epoch");
  if (consumed_ == total_batches_) {
    if (!epoch_finished_) {
      epoch_finished_ = true;
      if (options_.last_batch == LastBatch::kRollover) {
        carry_.assign(order_->begin() + total_batches_ * options_.batch_size, order_->end());
      }
    }
    return false;
  }
  // This wait ends: with consumed_ < total_batches_ and batch consumed_ not
  // ready, a worker is preparing it or one is free to start it, and a
  // worker finishes every batch it starts for this epoch by queueing it or
  // recording an error. The batches before a failure all started before
  // it (they are started in order), so they are still delivered, in order.
  const auto here = [this] { return ready_.find(consumed_); };
  consumer_cv_.wait(lock, [&] { return here() != ready_.end() || (error_ != nullptr && error_batch_ == consumed_); });
  const auto it = here();
  if (it == ready_.end()) std::rethrow_exception(error_);
  out = std::move(it->second);
  ready_.erase(it);
  ++consumed_;
  lock.unlock();
  producer_cv_.notify_one();
  return true;
}

int64_t BatchLoader::batches_per_epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch_started_ ? total_batches_ : count_batches(sampler_.part_len());
}

bool BatchLoader::can_produce() const {
  return epoch_started_ && error_ == nullptr && produced_ < total_batches_ &&
         produced_ - consumed_ < std::max(options_.prefetch, num_workers_);
}

void BatchLoader::run_worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    producer_cv_.wait(lock, [this] { return stopping_.load() || can_produce(); });
    if (stopping_.load()) return;
    const uint64_t generation = generation_.load();
    const int64_t number = produced_++;
    const int64_t begin = number * options_.batch_size;
    const int64_t epoch = epoch_;
    const std::shared_ptr<const std::vector<int64_t>> order = order_;
    lock.unlock();

    const int64_t count = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order->size()) - begin);
    std::optional<Batch> batch;
    std::exception_ptr error;
    try {
      batch = assemble(order->data() + begin, count, epoch, begin, generation);
    } catch (...) {
      error = std::current_exception();
    }

    lock.lock();
    // A batch (or failure) of an abandoned epoch is dropped; so is a batch
    // that shutdown cut short, which the wait above then ends on.
    if (generation != generation_.load() || (!batch && !error)) continue;
    try {
      if (error) {
        record_failure(error, number);
      } else {
        ready_.emplace(number, std::move(*batch));
      }
    } catch (...) {
      record_failure(std::current_exception(), number);
    }
    consumer_cv_.notify_one();
  }
}

void BatchLoader::record_failure(std::exception_ptr error, int64_t number) {
  if (error_ == nullptr || number < error_batch_) {
    error_ = std::move(error);
    error_batch_ = number;
  }
}

std::optional<Batch> BatchLoader::assemble(const int64_t* indices, int64_t count, int64_t epoch, int64_t position,
                                           uint64_t generation) const {
  std::vector<int64_t> dims{count};
  for (size_t d = 0; d < sample_shape_.ndim(); ++d) dims.push_back(sample_shape_[d]);
  Batch batch{core::NDArray::empty(cpu_, core::DType::kFloat32, core::Shape(dims)),
              core::NDArray::empty(cpu_, core::DType::kInt32, core::Shape{count})};
  const size_t sample_numel = static_cast<size_t>(sample_shape_.numel());
  const Augmentation& augmentation = options_.augmentation;
  std::vector<uint8_t> pixels(sample_numel);
  float* images = batch.images.data_as<float>();
  int32_t* labels = batch.labels.data_as<int32_t>();
  for (int64_t i = 0; i < count; ++i) {
    // Checked per sample so that shutdown or a restarted epoch never waits
    // for a whole batch of slow reads.
    if (stopping_.load(std::memory_order_relaxed) || generation_.load(std::memory_order_relaxed) != generation) {
      return std::nullopt;
    }
    if (augmentation.random_resized_crop) {
      const auto choose = [&](int64_t height, int64_t width) {
        return draw_resized_crop(augmentation, augment_stream_, epoch, position + i, height, width);
      };
      labels[i] = dataset_->read_region(indices[i], choose, pixels.data());
    } else {
      labels[i] = dataset_->read_sample(indices[i], pixels.data());
    }
    float* dst = images + static_cast<size_t>(i) * sample_numel;
    if (augmentation.enabled()) {
      const AugmentDraw draw = draw_augmentation(augmentation, augment_stream_, epoch, position + i);
      transform_image(pixels.data(), sample_shape_[0], sample_shape_[1], sample_shape_[2], augmentation.crop_padding,
                      draw, normalised_.data(), dst);
      continue;
    }
    // One table: the whole sample in one loop, whatever its shape.
    const size_t planes = normalised_.size();
    const size_t plane = sample_numel / planes;
    for (size_t c = 0; c < planes; ++c) {
      const std::array<float, 256>& table = normalised_[c];
      const uint8_t* src = pixels.data() + c * plane;
      float* out = dst + c * plane;
      for (size_t p = 0; p < plane; ++p) out[p] = table[src[p]];
    }
  }
  return batch;
}

}  // namespace dt::data
