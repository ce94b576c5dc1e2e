// CachingAllocator: device memory for one GPU, recycled instead of returned to
// the driver, because cudaMalloc and cudaFree are slow and cudaFree waits for
// the whole device. Training allocates the same sizes every step, so after the
// first step nearly every request is served from the cache.
//
// Stream ordering: a block is handed back to the cache as soon as its array is
// gone, while kernels queued earlier may still be using it. That is safe
// because every allocator belongs to one GpuContext and all work on its
// memory is queued on that context's one stream: whatever reuses the block is
// queued behind those kernels. Memory used on any other stream must be
// synchronised with the context's stream before it is released.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/memory_counters.h"

namespace dt::core::cuda {

class CachingAllocator {
 public:
  // Requests below kSmallLimit are rounded up to kSmallGranularity, larger ones
  // to kLargeGranularity, so that slightly different sizes share blocks.
  static constexpr size_t kSmallGranularity = 512;
  static constexpr size_t kSmallLimit = size_t{1} << 20;
  static constexpr size_t kLargeGranularity = size_t{2} << 20;

  struct Stats {
    size_t allocated_bytes = 0;       // in blocks handed out now (rounded sizes)
    size_t peak_allocated_bytes = 0;  // the most allocated_bytes has been
    size_t cached_bytes = 0;          // in free blocks kept for reuse
    size_t device_malloc_calls = 0;   // successful cudaMalloc calls so far
    size_t allocations = 0;           // blocks handed out so far, cached or new
  };

  explicit CachingAllocator(int device_id);
  ~CachingAllocator();  // frees every block, cached or not
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  int device_id() const { return device_id_; }

  // A block of at least `bytes` (nullptr for 0). On a failed cudaMalloc the
  // cache is released and the call retried once; then Error(kOutOfMemory)
  // naming the bytes asked, in use and cached.
  void* allocate(size_t bytes);
  // Returns a block from allocate() to the cache; nullptr is ignored.
  void deallocate(void* ptr) noexcept;
  // Gives every cached block back to the driver, for other processes or
  // libraries that allocate outside this cache.
  void release_cached();
  Stats stats() const;
  // The same figures in the form every context reports (core/memory_counters.h).
  MemoryStats memory_stats() const;
  // Lowers the peak to what is in use now.
  void reset_peak() noexcept;

  // The size allocate() reserves for `bytes`; 0 when rounding would overflow.
  static size_t rounded_size(size_t bytes) noexcept;

 private:
  void release_cached_locked();
  std::string device_name() const;

  const int device_id_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> in_use_;  // block -> rounded size
  std::multimap<size_t, void*> free_;         // rounded size -> block, for best fit
  // In use, peak and allocations; the rest of Stats below, under mutex_.
  MemoryCounters counters_;
  size_t cached_bytes_ = 0;
  size_t device_malloc_calls_ = 0;
};

}  // namespace dt::core::cuda
