// DeviceBuffer: device memory from a context's caching allocator for as long
// as a kernel object or one call needs it (cuDNN workspaces, saved softmax
// probabilities, argmax indices). Handing a workspace back right after its
// kernels are queued is safe: the allocator serves one stream, so whatever
// reuses the block is queued behind them (core/cuda/caching_allocator.h).
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "core/context.h"

namespace dt::ops::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::shared_ptr<core::Context> ctx, size_t bytes)
      : ctx_(std::move(ctx)), bytes_(bytes), ptr_(ctx_->allocate(bytes)) {}
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ctx_(std::move(other.ctx_)), bytes_(std::exchange(other.bytes_, 0)), ptr_(std::exchange(other.ptr_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ctx_ = std::move(other.ctx_);
      bytes_ = std::exchange(other.bytes_, 0);
      ptr_ = std::exchange(other.ptr_, nullptr);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept {
    if (ptr_ != nullptr) ctx_->deallocate(ptr_, bytes_);
    ptr_ = nullptr;
  }

  std::shared_ptr<core::Context> ctx_;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

}  // namespace dt::ops::cuda
