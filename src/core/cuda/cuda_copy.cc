#include "core/cuda/cuda_copy.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "core/gpu_copy_path.h"

namespace dt::core::cuda {

void copy_from_host(const Context& dst_ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t stream = stream_of(dst_ctx);
  DeviceGuard guard(dst_ctx.device_id());
  DT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  DT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void copy_to_host(void* dst, const Context& src_ctx, const void* src, size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t stream = stream_of(src_ctx);
  DeviceGuard guard(src_ctx.device_id());
  DT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  DT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void copy_between(const Context& dst_ctx, void* dst, const Context& src_ctx, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (dst_ctx.is_cpu() && src_ctx.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
  if (dst_ctx.is_cpu()) {
    copy_to_host(dst, src_ctx, src, bytes);
    return;
  }
  if (src_ctx.is_cpu()) {
    copy_from_host(dst_ctx, dst, src, bytes);
    return;
  }
  // Two GPU contexts: the source may still be written by work on its own
  // stream, which the destination's stream knows nothing about. One context
  // (a copy within an array's own device memory) is ordered by its stream.
  if (&src_ctx != &dst_ctx) {
    DeviceGuard guard(src_ctx.device_id());
    DT_CUDA_CHECK(cudaStreamSynchronize(stream_of(src_ctx)));
  }
  const auto& into = static_cast<const GpuContext&>(dst_ctx);
  const GpuCopyPath path = choose_gpu_copy_path(src_ctx.device_id(), dst_ctx.device_id(), into.peer_copies());
  into.copies_in().count(path);
  if (path == GpuCopyPath::kThroughHost) {
    into.host_staging().copy(dst_ctx, dst, src_ctx, src, bytes);
    return;
  }
  const cudaStream_t stream = stream_of(dst_ctx);
  DeviceGuard guard(dst_ctx.device_id());
  if (path == GpuCopyPath::kSameDevice) {
    DT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  } else {
    DT_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_ctx.device_id(), src, src_ctx.device_id(), bytes, stream));
  }
  DT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace dt::core::cuda
