// Page-locked host memory (cudaHostAlloc): the copy engine reads it directly,
// so a cudaMemcpyAsync from it returns at once and runs beside the kernels,
// where one from pageable memory is staged by the driver on the host first.
// Owned: freed with cudaFreeHost by the destructor. Move-only.
#pragma once

#include <cstddef>

namespace dt::core::cuda {

class PinnedBuffer {
 public:
  // Error(kOutOfMemory) when the driver has no page-locked memory left (the
  // caller may fall back to pageable memory), Error(kNoDevice) without a
  // usable driver, Error(kCuda) otherwise. 0 bytes: no memory, data() null.
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;

  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace dt::core::cuda
