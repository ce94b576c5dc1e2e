#include "data/batch_stager.h"

#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

namespace dt::data {

namespace {

using core::ErrorCode;
using core::NDArray;

core::Shape batch_shape_of(const BatchLoader& loader) {
  std::vector<int64_t> dims{loader.batch_size()};
  const core::Shape& sample = loader.sample_shape();
  for (size_t d = 0; d < sample.ndim(); ++d) dims.push_back(sample[d]);
  return core::Shape(dims);
}

const std::shared_ptr<core::Context>& checked(const std::shared_ptr<core::Context>& target) {
  core::require(target != nullptr, ErrorCode::kInvalidArgument, "the batch stager needs a target context, got null");
  return target;
}

}  // namespace

BatchStager::BatchStager(BatchLoader& loader, std::shared_ptr<core::Context> target)
    : loader_(loader), target_(checked(target)), batch_shape_(batch_shape_of(loader)) {
  slots_.resize(kSlots);
  for (Slot& slot : slots_) {
    slot.images = new_images();
    slot.labels = new_labels();
  }
  uploader_ = core::make_slot_uploader(target_, kSlots, {slots_[0].images.nbytes(), slots_[0].labels.nbytes()});
}

BatchStager::~BatchStager() { stop_thread(); }

NDArray BatchStager::new_images() const { return NDArray::empty(target_, core::DType::kFloat32, batch_shape_); }

NDArray BatchStager::new_labels() const {
  return NDArray::empty(target_, core::DType::kInt32, core::Shape{batch_shape_[0]});
}

void BatchStager::stop_thread() {
  {
    // Under the lock, so the thread cannot miss the wake-up between testing
    // its predicate and going to sleep.
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  released_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BatchStager::start_epoch(int64_t epoch) {
  stop_thread();
  {
    // Not started until the loader and the thread are: a failure below
    // leaves next() refusing, not waiting for a thread that is not there.
    std::lock_guard<std::mutex> lock(mutex_);
    epoch_started_ = false;
    stopping_ = false;
    staged_ = delivered_ = released_ = 0;
    end_ = -1;
    error_ = nullptr;
  }
  // What was delivered or staged is abandoned: every slot is released (the
  // consumer may still hold a batch of the epoch before; release() gives
  // its slot new arrays then).
  for (size_t i = 0; i < slots_.size(); ++i) release(i);
  loader_.start_epoch(epoch);
  // The loader is the thread's alone from here; the join above ended the
  // previous thread's use of it.
  thread_ = std::thread(&BatchStager::run, this);
  std::lock_guard<std::mutex> lock(mutex_);
  epoch_started_ = true;
}

void BatchStager::release(size_t index) {
  Slot& slot = slots_[index];
  // Ours alone is one reference; more means the consumer kept the batch
  // (or a view of it), which must stay as it is.
  if (slot.images.storage_use_count() > 1) slot.images = new_images();
  if (slot.labels.storage_use_count() > 1) slot.labels = new_labels();
  // After the new arrays: memory the target's allocator hands out is free
  // for work queued on its stream from then on, which the event covers.
  if (uploader_) uploader_->release(index);
}

bool BatchStager::next(Batch& out) {
  out = Batch{};
  std::unique_lock<std::mutex> lock(mutex_);
  core::require(epoch_started_, ErrorCode::kBadState, "BatchStager::next called before start_epoch");
  if (delivered_ > released_) {
    // The previous batch's step is queued by now: its slot goes back to the
    // thread. release() runs unlocked; the thread touches the slot only
    // after it sees released_ move.
    const size_t index = static_cast<size_t>(released_ % static_cast<int64_t>(kSlots));
    lock.unlock();
    release(index);
    lock.lock();
    ++released_;
    released_cv_.notify_one();
  }
  // This wait ends: the thread stages batch delivered_ (its slot is free:
  // every earlier batch was released) or stops with the end or an error;
  // the loader's next() it waits on returns or throws.
  staged_cv_.wait(lock, [this] { return staged_ > delivered_ || end_ == delivered_ || error_ != nullptr; });
  if (staged_ == delivered_) {
    if (error_ != nullptr) std::rethrow_exception(error_);
    return false;
  }
  const size_t index = static_cast<size_t>(delivered_ % static_cast<int64_t>(kSlots));
  lock.unlock();
  Slot& slot = slots_[index];
  if (uploader_) uploader_->use_after_upload(index);
  out.images = slot.images.slice(0, slot.rows);
  out.labels = slot.labels.slice(0, slot.rows);
  last_slot_ = index;
  lock.lock();
  ++delivered_;
  return true;
}

void BatchStager::run() {
  for (int64_t number = 0;; ++number) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      released_cv_.wait(lock, [&] { return stopping_ || number - released_ < static_cast<int64_t>(kSlots); });
      if (stopping_) return;
    }
    bool more = false;
    std::exception_ptr error;
    try {
      more = stage(slots_[static_cast<size_t>(number % static_cast<int64_t>(kSlots))],
                   static_cast<size_t>(number % static_cast<int64_t>(kSlots)));
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error) {
        error_ = error;
      } else if (more) {
        ++staged_;
      } else {
        end_ = number;
      }
    }
    staged_cv_.notify_one();
    if (error || !more) return;
  }
}

bool BatchStager::stage(Slot& slot, size_t index) {
  Batch batch;
  if (!loader_.next(batch)) return false;
  const int64_t rows = batch.size();
  const size_t image_bytes = batch.images.nbytes();
  const size_t label_bytes = batch.labels.nbytes();
  // The loader makes what it promises; a mismatch is a bug, said plainly
  // rather than written past the slot.
  if (batch.images.dtype() != core::DType::kFloat32 || batch.labels.dtype() != core::DType::kInt32 || rows < 1 ||
      rows > batch_shape_[0] || batch.images.shape()[0] != rows ||
      image_bytes != static_cast<size_t>(rows) * (slot.images.nbytes() / static_cast<size_t>(batch_shape_[0]))) {
    throw core::Error(ErrorCode::kInternal, "the loader's batch " + batch.images.shape().to_string() + " / " +
                                                batch.labels.shape().to_string() + " does not fit a staging slot of " +
                                                batch_shape_.to_string());
  }
  if (uploader_) {
    uploader_->wait_host_free(index);
    std::memcpy(uploader_->host(index, 0), batch.images.data(), image_bytes);
    std::memcpy(uploader_->host(index, 1), batch.labels.data(), label_bytes);
    uploader_->upload(index, {slot.images.data(), slot.labels.data()}, {image_bytes, label_bytes});
  } else {
    std::memcpy(slot.images.data(), batch.images.data(), image_bytes);
    std::memcpy(slot.labels.data(), batch.labels.data(), label_bytes);
  }
  slot.rows = rows;
  return true;
}

}  // namespace dt::data
