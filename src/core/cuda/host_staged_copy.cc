#include "core/cuda/host_staged_copy.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"

namespace dt::core::cuda {

HostStagedCopy::~HostStagedCopy() {
  // At process exit the driver may be gone already, and the memory with it.
  if (pinned_ != nullptr && cudaFreeHost(pinned_) != cudaSuccess) static_cast<void>(cudaGetLastError());
}

void HostStagedCopy::copy(const Context& dst_ctx, void* dst, const Context& src_ctx, const void* src, size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t src_stream = stream_of(src_ctx);
  const cudaStream_t dst_stream = stream_of(dst_ctx);
  std::lock_guard<std::mutex> lock(mutex_);
  if (pinned_ == nullptr) DT_CUDA_CHECK(cudaMallocHost(&pinned_, chunk_bytes_));
  auto* out = static_cast<uint8_t*>(dst);
  const auto* in = static_cast<const uint8_t*>(src);
  for (size_t done = 0; done < bytes; done += chunk_bytes_) {
    const size_t n = std::min(chunk_bytes_, bytes - done);
    {
      DeviceGuard guard(src_ctx.device_id());
      DT_CUDA_CHECK(cudaMemcpyAsync(pinned_, in + done, n, cudaMemcpyDeviceToHost, src_stream));
      DT_CUDA_CHECK(cudaStreamSynchronize(src_stream));
    }
    DeviceGuard guard(dst_ctx.device_id());
    DT_CUDA_CHECK(cudaMemcpyAsync(out + done, pinned_, n, cudaMemcpyHostToDevice, dst_stream));
    // The next chunk overwrites the buffer this one is read from.
    DT_CUDA_CHECK(cudaStreamSynchronize(dst_stream));
  }
}

}  // namespace dt::core::cuda
