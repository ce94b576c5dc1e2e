// Host staging slots and their copies to a GPU, for a producer that fills
// one slot while the device computes on what an earlier slot delivered
// (double buffering). Each slot holds a few parts (a batch's data and
// labels) in host memory, page-locked where the driver allows. Its copies
// run on a stream of their own, ordered against the target context's
// stream by events:
//   - upload() first makes the copy stream wait until the target's stream
//     has done the work queued before the slot was last released, so the
//     device memory it writes is no longer read; then it queues the copies
//     and records the slot's "copied" event;
//   - use_after_upload() makes the target's stream wait for that event, so
//     kernels queued afterwards see the bytes;
//   - wait_host_free() blocks the host until the slot's last copies have
//     read its host memory, before the producer overwrites it.
// Threads: the producer (host(), wait_host_free(), upload()) and the
// consumer (use_after_upload(), release()) may be two threads, provided
// the calls on one slot are ordered (the caller hands a slot from one to
// the other under its own lock).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/context.h"

namespace dt::core {

class SlotUploader {
 public:
  virtual ~SlotUploader() = default;

  // Host memory of `part` of `slot`, as many bytes as given at creation.
  virtual void* host(size_t slot, size_t part) = 0;
  // Whether the host memory is page-locked; false after the driver refused
  // it (the copies then stage through the driver and overlap less).
  virtual bool pinned() const = 0;

  virtual void wait_host_free(size_t slot) = 0;
  // Copies `bytes[p]` bytes of part p of `slot` to `device[p]` (memory of
  // the target context), one entry per part.
  virtual void upload(size_t slot, const std::vector<void*>& device, const std::vector<size_t>& bytes) = 0;
  virtual void use_after_upload(size_t slot) = 0;
  // The device memory that `slot` last wrote may be overwritten once the
  // target's stream has done the work queued so far.
  virtual void release(size_t slot) = 0;
};

// The uploader for a GPU target: `slots` slots of parts of `part_bytes`
// bytes each. Null for a CPU target, whose producer writes the consumer's
// arrays itself. Error(kNotSupported) for a GPU in a build without CUDA.
std::unique_ptr<SlotUploader> make_slot_uploader(const std::shared_ptr<Context>& target, size_t slots,
                                                 const std::vector<size_t>& part_bytes);

}  // namespace dt::core
