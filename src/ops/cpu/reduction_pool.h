// The threads that sum large arrays on the CPU: a parameter server's rounds
// (ps/server/part_rounds) and a worker's merge of the values listed under a
// key (kvstore/key_reducer), sized as MXNet sizes its CPU reduce
// (MXNET_KVSTORE_REDUCTION_NTHREADS threads for arrays of at least
// MXNET_KVSTORE_BIGARRAY_BOUND elements).
//
// A sum of at least parallel_bytes is cut into one contiguous range of
// elements per thread: the calling thread sums one range, the pool's threads
// the others. Each element is still computed by one thread, from the same
// operands, in the same order, so the result is bit-identical to the serial
// sum: dist_sync's exactness (every worker gets the very bytes a rank-order
// sum gives) does not depend on the thread count. A smaller sum runs on the
// caller alone, where waking threads would cost more than they save.
//
// Threading: add() may be called from several threads at once (a server's
// handler threads each sum their own part); the calls share the pool's
// threads, and each caller sums ranges of its own call too, so a call never
// waits for another call's work. The destructor joins the threads; no call
// may be running then. The store that sums owns its pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/dtype.h"

namespace dt::ops::cpu {

struct ReductionSettings {
  // MXNet's MXNET_KVSTORE_REDUCTION_NTHREADS default. 1: every sum serial.
  int threads = 4;
  // MXNet's MXNET_KVSTORE_BIGARRAY_BOUND default (10^6 elements) in float32
  // bytes, as ps::PsOptions::bigarray_bound_bytes.
  size_t parallel_bytes = 4000000;
};

class ReductionPool {
 public:
  // More would only contend: no machine this runs on has more cores to give
  // one array's sum.
  static constexpr int kMaxThreads = 256;

  // Starts settings.threads - 1 threads. Error(kInvalidArgument) for a
  // thread count outside 1..kMaxThreads or parallel_bytes 0.
  explicit ReductionPool(const ReductionSettings& settings = {});
  ~ReductionPool();
  ReductionPool(const ReductionPool&) = delete;
  ReductionPool& operator=(const ReductionPool&) = delete;

  // The threads that sum one large array, the caller's included.
  int threads() const { return threads_; }
  // The threads this pool started (threads() - 1), all running until it is
  // destroyed.
  int started_threads() const { return static_cast<int>(workers_.size()); }
  size_t parallel_bytes() const { return parallel_bytes_; }
  // How many ranges a sum of count elements of dtype is cut into: 1 below
  // parallel_bytes (or with one thread), else threads() ranges of whole
  // cache lines (fewer when the array has too few lines for that).
  size_t ranges_for(core::DType dtype, size_t count) const;

  // out = a + b elementwise over count elements of a floating dtype, as
  // ops::cpu::add (out may be a), in ranges_for(dtype, count) ranges.
  // Error(kNotSupported) for a dtype without arithmetic.
  void add(core::DType dtype, void* out, const void* a, const void* b, size_t count);

  // How many sums were cut into ranges so far: what tests and diagnostics
  // see of the pool at work.
  uint64_t split_sums() const { return split_sums_.load(); }

 private:
  struct Sum;
  void work();
  // Runs range index of sum and counts it finished; mutex_ held on entry
  // and on return (released while summing).
  void run_range(Sum& sum, size_t index, std::unique_lock<std::mutex>& lock);

  const int threads_;
  const size_t parallel_bytes_;
  std::atomic<uint64_t> split_sums_{0};
  std::mutex mutex_;
  std::condition_variable work_ready_;  // a sum was queued, or the pool stops
  std::condition_variable range_done_;  // some sum's last range finished
  std::deque<Sum*> queue_;              // sums with ranges nobody took yet
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dt::ops::cpu
