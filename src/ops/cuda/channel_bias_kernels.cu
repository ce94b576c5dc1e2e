// Per-channel bias of convolutions and inner products: adding it, and its
// gradient (the per-channel sum). Launchers in ops/cuda/layer_kernels.h.
#include "ops/cuda/layer_kernels.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/element_access.cuh"
#include "ops/cuda/layer_kernel_launch.cuh"

namespace dt::ops::cuda::kernels {

namespace {

template <typename T>
__global__ void add_channel_bias_kernel(T* y, const float* bias, int64_t total, int64_t C, int64_t inner,
                                        TensorLayout layout) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    store_float(y, i, load_float(y, i) + bias[layout_channel(layout, i, C, inner)]);
  }
}

// One block per channel; in NHWC its reads are C apart (not coalesced):
// correct, not tuned, until NHWC has been measured on a GPU.
template <typename T>
__global__ void sum_per_channel_kernel(const T* x, float* out, int64_t N, int64_t C, int64_t inner,
                                       TensorLayout layout) {
  const int64_t c = blockIdx.x;
  const int64_t step = layout_plane_step(layout, C);
  float acc = 0.0f;
  for (int64_t j = threadIdx.x; j < N * inner; j += blockDim.x) {
    const int64_t n = j / inner, i = j - n * inner;
    acc += load_float(x, layout_plane_base(layout, n, c, C, inner) + i * step);
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) out[c] = acc;
}

}  // namespace

void add_channel_bias(cudaStream_t stream, core::DType dtype, void* y, const float* bias, int64_t N, int64_t C,
                      int64_t inner, TensorLayout layout) {
  dispatch_activation_dtype(dtype, "add_channel_bias", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = N * C * inner;
    add_channel_bias_kernel<T><<<blocks_for(total), kBlockSize, 0, stream>>>(typed<T>(y), bias, total, C, inner, layout);
    check_launch();
  });
}

void sum_per_channel(cudaStream_t stream, core::DType dtype, const void* x, float* out, int64_t N, int64_t C,
                     int64_t inner, TensorLayout layout) {
  dispatch_activation_dtype(dtype, "sum_per_channel", [&](auto tag) {
    using T = decltype(tag);
    sum_per_channel_kernel<T><<<static_cast<unsigned>(C), kReduceBlock, 0, stream>>>(typed<T>(x), out, N, C, inner, layout);
    check_launch();
  });
}

}  // namespace dt::ops::cuda::kernels
