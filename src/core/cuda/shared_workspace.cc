#include "core/cuda/shared_workspace.h"

namespace dt::core::cuda {

SharedWorkspace::~SharedWorkspace() { allocator_.deallocate(block_); }

void* SharedWorkspace::get(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes <= bytes_) return block_;
  // Allocate before freeing: when the allocation fails the old block stays
  // and so do the calls that fit in it.
  void* grown = allocator_.allocate(bytes);
  allocator_.deallocate(block_);
  block_ = grown;
  // The allocator reserved the rounded size: requests up to it fit as well.
  bytes_ = CachingAllocator::rounded_size(bytes);
  return block_;
}

size_t SharedWorkspace::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace dt::core::cuda
