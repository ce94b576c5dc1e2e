#include "ops/cpu/reduction_pool.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <system_error>

#include "core/error.h"
#include "ops/cpu/tensor_math.h"

namespace dt::ops::cpu {

using core::Error;
using core::ErrorCode;

namespace {

// Ranges start on a cache line of their own, so that two threads never
// write into one line.
constexpr size_t kLineBytes = 64;

int checked_threads(const ReductionSettings& settings) {
  if (settings.threads < 1 || settings.threads > ReductionPool::kMaxThreads) {
    throw Error(ErrorCode::kInvalidArgument, "reduction threads must be 1 to " +
                                                 std::to_string(ReductionPool::kMaxThreads) + ", got " +
                                                 std::to_string(settings.threads));
  }
  if (settings.parallel_bytes == 0) {
    throw Error(ErrorCode::kInvalidArgument, "the size from which sums run in parallel must be positive");
  }
  return settings.threads;
}

// Elements per range: count split over ranges, rounded up to whole lines.
size_t chunk_for(size_t count, size_t ranges, size_t element_bytes) {
  const size_t per_line = std::max<size_t>(1, kLineBytes / element_bytes);
  const size_t even = (count + ranges - 1) / ranges;
  return (even + per_line - 1) / per_line * per_line;
}

}  // namespace

// One call's sum, on the caller's stack until its last range finished.
struct ReductionPool::Sum {
  Sum(core::DType dtype, void* out, const void* a, const void* b, size_t count, size_t chunk, size_t ranges)
      : dtype(dtype), out(out), a(a), b(b), count(count), chunk(chunk), ranges(ranges) {}
  const core::DType dtype;
  void* const out;
  const void* const a;
  const void* const b;
  const size_t count;
  const size_t chunk;  // elements per range; the last one may be shorter
  const size_t ranges;
  size_t next = 0;      // the first range nobody took; guarded by mutex_
  size_t finished = 0;  // guarded by mutex_
  std::exception_ptr error;  // the first range's failure; guarded by mutex_
};

ReductionPool::ReductionPool(const ReductionSettings& settings)
    : threads_(checked_threads(settings)), parallel_bytes_(settings.parallel_bytes) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  try {
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { work(); });
  } catch (const std::system_error& e) {
    // Threads already started must be joined before the members go.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& t : workers_) t.join();
    throw Error(ErrorCode::kOutOfMemory, "cannot start the reduction threads (" + std::to_string(threads_) +
                                             "): " + e.what());
  }
}

ReductionPool::~ReductionPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

size_t ReductionPool::ranges_for(core::DType dtype, size_t count) const {
  const size_t element_bytes = core::dtype_size(dtype);
  if (threads_ == 1 || count == 0 || count * element_bytes < parallel_bytes_) return 1;
  const size_t chunk = chunk_for(count, static_cast<size_t>(threads_), element_bytes);
  return (count + chunk - 1) / chunk;
}

void ReductionPool::add(core::DType dtype, void* out, const void* a, const void* b, size_t count) {
  const size_t ranges = ranges_for(dtype, count);
  if (ranges == 1) {
    cpu::add(dtype, out, a, b, count);
    return;
  }
  // Refused here, on the caller, rather than once per range.
  if (!core::is_floating(dtype)) cpu::add(dtype, out, a, b, 0);
  Sum sum(dtype, out, a, b, count, chunk_for(count, static_cast<size_t>(threads_), core::dtype_size(dtype)), ranges);
  std::unique_lock<std::mutex> lock(mutex_);
  queue_.push_back(&sum);
  work_ready_.notify_all();
  while (sum.next < sum.ranges) {
    const size_t index = sum.next++;
    if (sum.next == sum.ranges) queue_.erase(std::find(queue_.begin(), queue_.end(), &sum));
    run_range(sum, index, lock);
  }
  // No deadline: what remains are ranges the pool's threads took, plain
  // arithmetic on memory this call owns, which ends.
  range_done_.wait(lock, [&sum] { return sum.finished == sum.ranges; });
  lock.unlock();
  split_sums_.fetch_add(1);
  if (sum.error) std::rethrow_exception(sum.error);
}

void ReductionPool::run_range(Sum& sum, size_t index, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  std::exception_ptr error;
  try {
    const size_t begin = index * sum.chunk;
    const size_t end = std::min(sum.count, begin + sum.chunk);
    const size_t offset = begin * core::dtype_size(sum.dtype);
    cpu::add(sum.dtype, static_cast<uint8_t*>(sum.out) + offset, static_cast<const uint8_t*>(sum.a) + offset,
             static_cast<const uint8_t*>(sum.b) + offset, end - begin);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  if (error && !sum.error) sum.error = error;
  if (++sum.finished == sum.ranges) range_done_.notify_all();
}

void ReductionPool::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Sum& sum = *queue_.front();
    const size_t index = sum.next++;
    if (sum.next == sum.ranges) queue_.pop_front();
    run_range(sum, index, lock);
  }
}

}  // namespace dt::ops::cpu
