#include "core/cuda/pinned_buffer.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "core/cuda/cuda_check.h"

namespace dt::core::cuda {

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  // Portable: the buffer is page-locked for every device, so a stager of any
  // GPU may use it whatever device is current on the allocating thread.
  if (bytes > 0) DT_CUDA_CHECK(cudaHostAlloc(&data_, bytes, cudaHostAllocPortable));
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  // A failure here (the driver already unloaded at exit) leaves nothing the
  // owner could do; the runtime's error slot is cleared so that the next
  // check does not report it as its own.
  if (data_ != nullptr && cudaFreeHost(data_) != cudaSuccess) static_cast<void>(cudaGetLastError());
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace dt::core::cuda
