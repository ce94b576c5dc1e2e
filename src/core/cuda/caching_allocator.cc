#include "core/cuda/caching_allocator.h"

#include <cuda_runtime_api.h>

#include <new>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/error.h"

namespace dt::core::cuda {

namespace {

size_t round_up(size_t bytes, size_t granularity) noexcept {
  const size_t rounded = (bytes + granularity - 1) / granularity * granularity;
  return rounded < bytes ? 0 : rounded;
}

}  // namespace

size_t CachingAllocator::rounded_size(size_t bytes) noexcept {
  return round_up(bytes, bytes < kSmallLimit ? kSmallGranularity : kLargeGranularity);
}

CachingAllocator::CachingAllocator(int device_id) : device_id_(device_id) {}

CachingAllocator::~CachingAllocator() {
  // Arrays keep their context, and so this allocator, alive; in_use_ is
  // therefore empty here unless a caller leaked a block, which is freed too.
  try {
    DeviceGuard guard(device_id_);
    for (const auto& [ptr, size] : in_use_) static_cast<void>(cudaFree(ptr));
    for (const auto& [size, ptr] : free_) static_cast<void>(cudaFree(ptr));
    static_cast<void>(cudaGetLastError());
  } catch (const Error&) {
    // No usable device any more (driver gone at process exit): the memory went
    // with it, and a destructor has no one to report to.
  }
}

void* CachingAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t size = rounded_size(bytes);
  if (size == 0) {
    throw Error(ErrorCode::kOutOfMemory, "cannot allocate " + std::to_string(bytes) + " bytes on " + device_name() +
                                             ": the size overflows when rounded up");
  }
  std::lock_guard<std::mutex> lock(mutex_);

  // Best fit, but at most twice the size asked: a huge cached block handed to
  // a small request would strand the rest of it. A miss that then runs out of
  // memory releases the cache and retries, so such blocks are not lost.
  const auto fit = free_.lower_bound(size);
  if (fit != free_.end() && fit->first - size <= size) {
    const auto [block, ptr] = *fit;
    in_use_.emplace(ptr, block);  // before erase: if this throws, the block stays cached
    free_.erase(fit);
    cached_bytes_ -= block;
    counters_.count_allocation(block);
    return ptr;
  }

  DeviceGuard guard(device_id_);
  void* ptr = nullptr;
  cudaError_t status = cudaMalloc(&ptr, size);
  size_t released = 0;
  if (status == cudaErrorMemoryAllocation && !free_.empty()) {
    static_cast<void>(cudaGetLastError());  // the retry's outcome is what counts
    released = cached_bytes_;
    release_cached_locked();
    status = cudaMalloc(&ptr, size);
  }
  if (status == cudaErrorMemoryAllocation) {
    static_cast<void>(cudaGetLastError());
    throw Error(ErrorCode::kOutOfMemory,
                device_name() + " is out of memory: asked for " + std::to_string(bytes) + " bytes (" +
                    std::to_string(size) + " reserved); " + std::to_string(counters_.in_use_bytes()) +
                    " bytes in use, " + std::to_string(released) + " cached bytes released before retrying");
  }
  if (status != cudaSuccess) throw_cuda_error(status, __FILE__, __LINE__, "cudaMalloc");
  try {
    in_use_.emplace(ptr, size);
  } catch (...) {
    static_cast<void>(cudaFree(ptr));
    throw;
  }
  ++device_malloc_calls_;
  counters_.count_allocation(size);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) noexcept {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = in_use_.find(ptr);
  if (it == in_use_.end()) return;  // not ours: freeing it could corrupt another owner's memory
  const size_t size = it->second;
  try {
    free_.emplace(size, ptr);
  } catch (const std::bad_alloc&) {
    // No host memory for the free-list node: the block stays counted as in
    // use, and the destructor frees it.
    return;
  }
  in_use_.erase(it);
  counters_.count_release(size);
  cached_bytes_ += size;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) return;
  DeviceGuard guard(device_id_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  // Cached blocks may still be read or written by kernels queued before they
  // were released to the cache; the driver must not hand them to anyone else
  // until that work is done.
  const cudaError_t synced = cudaDeviceSynchronize();
  cudaError_t freed = cudaSuccess;
  for (const auto& [size, ptr] : free_) {
    const cudaError_t status = cudaFree(ptr);
    if (freed == cudaSuccess) freed = status;
  }
  free_.clear();
  cached_bytes_ = 0;
  if (synced != cudaSuccess) throw_cuda_error(synced, __FILE__, __LINE__, "cudaDeviceSynchronize");
  if (freed != cudaSuccess) throw_cuda_error(freed, __FILE__, __LINE__, "cudaFree");
}

std::string CachingAllocator::device_name() const { return "gpu(" + std::to_string(device_id_) + ")"; }

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats stats;
  stats.allocated_bytes = counters_.in_use_bytes();
  stats.peak_allocated_bytes = counters_.peak_bytes();
  stats.cached_bytes = cached_bytes_;
  stats.device_malloc_calls = device_malloc_calls_;
  stats.allocations = counters_.allocations();
  return stats;
}

MemoryStats CachingAllocator::memory_stats() const {
  const Stats stats = this->stats();
  MemoryStats out;
  out.in_use_bytes = stats.allocated_bytes;
  out.peak_bytes = stats.peak_allocated_bytes;
  out.cached_bytes = stats.cached_bytes;
  out.allocations = stats.allocations;
  return out;
}

void CachingAllocator::reset_peak() noexcept {
  // Under the lock, so that the peak restarts from a figure no allocation is
  // halfway through changing.
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.reset_peak();
}

}  // namespace dt::core::cuda
