// SharedWorkspace: one block of scratch device memory per GPU context that
// the library's calls needing a workspace (cuDNN's convolutions) share. It
// grows to the largest workspace asked for and stays, so that:
// - a training step allocates no workspace once its layers are built: the
//   addresses its kernels use stay the same from step to step, which
//   capturing the step in a CUDA graph needs;
// - the memory held is the largest workspace, not one per layer.
// Compared with a workspace allocated per call from the caching allocator
// (what the convolutions did before), the block counts as in use between
// calls, so the allocator's peak may be higher by up to its size.
//
// Sharing is safe because all work of a context is queued on its one stream,
// in order: one call's kernels are done with the block before the next
// call's start. Growing hands the old block back to the context's caching
// allocator, which gives it out again only to work queued behind the
// kernels that used it (core/cuda/caching_allocator.h).
//
// Thread-safe to call; a block it returned stays valid until the next call
// that grows it, which the one-thread-per-context rule for kernels
// (GpuContext) makes a call of the same thread.
#pragma once

#include <cstddef>
#include <mutex>

#include "core/cuda/caching_allocator.h"

namespace dt::core::cuda {

class SharedWorkspace {
 public:
  explicit SharedWorkspace(CachingAllocator& allocator) : allocator_(allocator) {}
  ~SharedWorkspace();  // returns the block to the allocator
  SharedWorkspace(const SharedWorkspace&) = delete;
  SharedWorkspace& operator=(const SharedWorkspace&) = delete;

  // A block of at least bytes (nullptr for 0 while nothing was reserved),
  // growing the workspace first when it is smaller. Error(kOutOfMemory) from
  // the allocator, the old block kept, when it cannot grow.
  void* get(size_t bytes);
  // Grows the workspace to at least bytes, as get() does, without using it:
  // a kernel object calls this when it is built, so that its calls later
  // find the block big enough.
  void reserve(size_t bytes) { static_cast<void>(get(bytes)); }
  size_t bytes() const;

 private:
  CachingAllocator& allocator_;
  mutable std::mutex mutex_;
  void* block_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace dt::core::cuda
