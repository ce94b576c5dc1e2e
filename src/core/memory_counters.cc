#include "core/memory_counters.h"

namespace dt::core {

void MemoryCounters::count_allocation(size_t bytes) noexcept {
  allocations_.fetch_add(1, std::memory_order_relaxed);
  const size_t in_use = in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  raise_peak(in_use);
}

void MemoryCounters::count_release(size_t bytes) noexcept { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }

void MemoryCounters::reset_peak() noexcept { peak_.store(in_use_.load(std::memory_order_relaxed), std::memory_order_relaxed); }

void MemoryCounters::raise_peak(size_t in_use) noexcept {
  // Another thread may raise the peak between the load and the exchange; the
  // loop retries until the stored peak is at least this thread's figure.
  size_t peak = peak_.load(std::memory_order_relaxed);
  while (in_use > peak && !peak_.compare_exchange_weak(peak, in_use, std::memory_order_relaxed)) {
  }
}

}  // namespace dt::core
