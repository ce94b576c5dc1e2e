// Launching element-wise kernels: a grid-stride loop over `count` elements,
// queued on a GPU context's stream with that device current, and the launch
// checked at once so a bad configuration surfaces as the caller's Error.
// Shared by every .cu file whose kernels visit arrays element by element.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "core/context.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"

namespace dt::core::cuda {

constexpr unsigned kGridBlockSize = 256;
// Enough resident threads to fill the largest GPUs (an H100 holds 132 SMs x
// 2048 threads); grid-stride loops cover longer arrays, and a fixed bound
// saves querying the device on every launch.
constexpr size_t kGridMaxBlocks = 4096;

__device__ inline size_t first_index() { return static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline size_t grid_stride() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

// Queues kernel(args...) on the context's stream over `count` elements;
// `what` names the kernel in the Error of a failed launch.
template <typename... Params, typename... Args>
void launch_grid(const core::Context& ctx, const char* what, size_t count, void (*kernel)(Params...),
                 Args... args) {
  if (count == 0) return;
  const cudaStream_t stream = stream_of(ctx);
  DeviceGuard guard(ctx.device_id());
  const auto blocks =
      static_cast<unsigned>(std::min((count + kGridBlockSize - 1) / kGridBlockSize, kGridMaxBlocks));
  kernel<<<blocks, kGridBlockSize, 0, stream>>>(args...);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw_cuda_error(status, __FILE__, __LINE__, what);
}

}  // namespace dt::core::cuda
