// MemoryCounters: the bytes a context's allocator has handed out, their peak
// and the number of allocations, kept by the allocator itself so that a
// benchmark or a user can read how much device memory a training step needs
// (the figure PyTorch users know as torch.cuda.max_memory_allocated).
//
// Atomics rather than a mutex: the CPU allocator takes no lock of its own,
// and arrays are freed from whichever thread drops the last reference.
#pragma once

#include <atomic>
#include <cstddef>

namespace dt::core {

// What a context's allocator holds; every size is what the allocator
// reserved for a request (its rounded size), not the bytes asked for.
struct MemoryStats {
  size_t in_use_bytes = 0;  // handed out now, to arrays and scratch space
  size_t peak_bytes = 0;    // the most in_use_bytes has been since creation or reset_peak
  size_t cached_bytes = 0;  // freed, but kept for reuse instead of returned (GPU cache)
  size_t allocations = 0;   // allocations served since the allocator was made
};

class MemoryCounters {
 public:
  // A block of `bytes` was handed out.
  void count_allocation(size_t bytes) noexcept;
  // A block of `bytes` came back.
  void count_release(size_t bytes) noexcept;
  // Lowers the peak to what is in use now, so that the next peak is that of
  // the work that follows (like torch.cuda.reset_peak_memory_stats).
  void reset_peak() noexcept;

  size_t in_use_bytes() const noexcept { return in_use_.load(std::memory_order_relaxed); }
  size_t peak_bytes() const noexcept { return peak_.load(std::memory_order_relaxed); }
  size_t allocations() const noexcept { return allocations_.load(std::memory_order_relaxed); }

 private:
  void raise_peak(size_t in_use) noexcept;

  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<size_t> allocations_{0};
};

}  // namespace dt::core
