// Batches on the device that trains on them, staged while the previous step
// computes (PyTorch's DataLoader pin_memory plus a CUDA-stream prefetcher,
// MXNet's PrefetchingIter onto a context). A thread of the stager's own
// takes batch k+1 from the loader, copies it into one of two host staging
// slots and, for a GPU, on to the device on a copy stream of its own, while
// the consumer's step k runs on the other slot (double buffering):
//   - the consumer's stream waits for a slot's copy (an event) before it
//     runs what the consumer queues on the delivered batch, and a slot's
//     device memory is written again only after the consumer's stream has
//     done the work queued before the consumer asked for the batch after
//     it (another event); its host memory only after its last copy read it;
//   - a delivered batch the consumer still holds when its slot comes round
//     again is never overwritten: the slot gets new arrays and the old ones
//     stay the consumer's (a Batch is the consumer's for as long as it
//     likes, as the loader's are). A float32 net keeps its last input until
//     its next forward, so under Trainer::fit a slot's device arrays are
//     new each time (from the context's caching allocator, on the consumer's
//     thread); the page-locked host slots and the events are what alternate;
//   - on a CPU target there is no copy stream: the thread copies the
//     loader's batch into the slot's (aligned host) arrays, which are what
//     the consumer gets; ordering and slot reuse are the same code.
// Batches come in the loader's order, each exactly once, data and labels
// from the same loader batch, bit for bit. Host memory is page-locked for
// a GPU (pageable, with a warning on the log, when the driver refuses).
// Threads: one consumer thread calls the members. While the stager lives,
// it alone calls the loader (from its thread, and from the consumer's in
// start_epoch): the caller must not use the loader meanwhile.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "core/slot_uploader.h"
#include "data/batch_loader.h"

namespace dt::data {

class BatchStager {
 public:
  static constexpr size_t kSlots = 2;

  // Stages the batches of `loader` onto `target` (the context the consumer
  // computes on; for a GPU, the consumer's kernels must run on its stream).
  // Error(kInvalidArgument) for a null target; for a GPU, the CUDA errors of
  // creating the copy stream, events and slots.
  BatchStager(BatchLoader& loader, std::shared_ptr<core::Context> target);
  // Stops the thread (it finishes the batch it is taking from the loader,
  // which the loader bounds) and waits for the copies in flight.
  ~BatchStager();
  BatchStager(const BatchStager&) = delete;
  BatchStager& operator=(const BatchStager&) = delete;

  // As BatchLoader::start_epoch: abandons what is staged of the epoch before.
  void start_epoch(int64_t epoch);
  // The epoch's next batch into `out`, on the target; false at the end of
  // the epoch (and on every later call until start_epoch). `out` is
  // overwritten: what it held before is let go first, so that its slot can
  // be reused without new arrays. Rethrows what the loader threw for this
  // batch, or what staging it threw; the epoch then stays failed until
  // start_epoch. Error(kBadState) before a start_epoch that succeeded.
  bool next(Batch& out);

  int64_t batches_per_epoch() const { return loader_.batches_per_epoch(); }
  // The slot of the batch last delivered (batch k is in slot k % kSlots).
  size_t last_slot() const { return last_slot_; }
  // Whether the host slots are page-locked (false on a CPU target).
  bool pinned() const { return uploader_ != nullptr && uploader_->pinned(); }

 private:
  struct Slot {
    core::NDArray images;  // (batch_size, sample...) on the target
    core::NDArray labels;  // (batch_size) int32 on the target
    int64_t rows = 0;      // of the batch staged into it
  };

  void run();
  // Batch `number` of the epoch, taken from the loader into `slot`; false at
  // the end of the epoch.
  bool stage(Slot& slot, size_t index);
  // The consumer lets go of the batch in slot `index`: new arrays if the
  // consumer still holds the old ones, then the release event.
  void release(size_t index);
  void stop_thread();
  core::NDArray new_images() const;
  core::NDArray new_labels() const;

  BatchLoader& loader_;
  const std::shared_ptr<core::Context> target_;
  const core::Shape batch_shape_;  // (batch_size, sample...)
  std::vector<Slot> slots_;
  // After slots_: destroyed first, so its copy stream is done with the
  // slots' device memory before that memory goes.
  std::unique_ptr<core::SlotUploader> uploader_;

  // The epoch in progress; counters of its batches, guarded by mutex_:
  // batch n may be staged once batch n - kSlots was released.
  std::mutex mutex_;
  std::condition_variable staged_cv_;    // wakes next(): a batch, the end or an error
  std::condition_variable released_cv_;  // wakes the thread: a free slot or stop
  bool epoch_started_ = false;
  bool stopping_ = false;
  int64_t staged_ = 0;
  int64_t delivered_ = 0;
  int64_t released_ = 0;
  int64_t end_ = -1;  // the epoch's batch count, once the loader said so
  std::exception_ptr error_;  // of batch staged_, which then never comes
  size_t last_slot_ = 0;

  std::thread thread_;
};

}  // namespace dt::data
