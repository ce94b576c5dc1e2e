// What the own layer kernels (ops/cuda/layer_kernels.h) share: launch
// shapes, grid-stride indices, a block-wide sum, the launch check, and the
// launchers' untyped arrays as the kernels' element type. Each launcher
// picks the kernel for the activations' dtype (dispatch_activation_dtype);
// T is the device element type (float, __half, __nv_bfloat16).
// Included by the .cu files of the layer kernels only, one per kind of
// layer: channel_bias_kernels, pooling_kernels, batch_norm_kernels,
// activation_kernels, softmax_cross_entropy_kernels.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/cuda_check.h"

namespace dt::ops::cuda::kernels {

constexpr unsigned kBlockSize = 256;
// As in tensor_math.cu: enough resident threads for the largest GPUs; grid-
// stride loops cover longer arrays.
constexpr int64_t kMaxBlocks = 4096;
// Per-channel and per-row reductions run one block per channel or row; the
// grid's x extent allows 2^31 - 1 blocks, far beyond any channel count.
constexpr unsigned kReduceBlock = 256;

inline unsigned blocks_for(int64_t count) {
  const int64_t blocks = (count + kBlockSize - 1) / kBlockSize;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}

__device__ inline int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// The sum of v over the block, valid in thread 0. Ends with a barrier so
// that the block may call it again right away.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T warp_sums[32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : T(0);
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  __syncthreads();
  return v;
}

inline void check_launch() { DT_CUDA_CHECK(cudaGetLastError()); }

// The launchers' untyped arrays as the kernels' element type.
template <typename T>
inline T* typed(void* p) {
  return static_cast<T*>(p);
}
template <typename T>
inline const T* typed(const void* p) {
  return static_cast<const T*>(p);
}

}  // namespace dt::ops::cuda::kernels
