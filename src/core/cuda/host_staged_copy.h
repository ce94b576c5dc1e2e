// A copy between two GPUs through pinned host memory, for
// MXNET_ENABLE_GPU_P2P=0 (core/gpu_copy_path.h): chunk by chunk, device to
// host on the source's stream, then host to device on the destination's.
// Pinned memory, so both halves are DMA transfers the driver need not stage
// again; one chunk at a time, so the buffer stays small whatever the array.
//
// Owned by the destination's GpuContext; its buffer is allocated at the
// first copy (most contexts never make one) and freed with it. Thread-safe:
// copies into one context take turns on its buffer.
#pragma once

#include <cstddef>
#include <mutex>

#include "core/context.h"

namespace dt::core::cuda {

class HostStagedCopy {
 public:
  static constexpr size_t kDefaultChunkBytes = size_t{4} << 20;

  explicit HostStagedCopy(size_t chunk_bytes = kDefaultChunkBytes) : chunk_bytes_(chunk_bytes) {}
  ~HostStagedCopy();
  HostStagedCopy(const HostStagedCopy&) = delete;
  HostStagedCopy& operator=(const HostStagedCopy&) = delete;

  // bytes from src (GPU src_ctx) to dst (GPU dst_ctx), complete on return.
  // The caller has waited for the work on src_ctx's stream that writes src.
  // Error(kOutOfMemory) when no pinned memory is left, kCuda for a failed
  // copy (the call site named).
  void copy(const Context& dst_ctx, void* dst, const Context& src_ctx, const void* src, size_t bytes);

 private:
  const size_t chunk_bytes_;
  std::mutex mutex_;
  void* pinned_ = nullptr;  // chunk_bytes_ of pinned host memory, once a copy needed it
};

}  // namespace dt::core::cuda
