// Batch normalisation: per-channel statistics, applying them, and the
// backward pass. Launchers in ops/cuda/layer_kernels.h.
#include "ops/cuda/layer_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ops/cuda/element_access.cuh"
#include "ops/cuda/layer_kernel_launch.cuh"

namespace dt::ops::cuda::kernels {

namespace {

// Per-channel sums in (channel, split) blocks: block b sums channel b / S
// over samples [N * s / S, N * (s + 1) / S), s = b % S, and a second kernel
// adds each channel's S partials in split order, one thread per channel.
// (One block per channel, as before, left most of a large GPU idle: 64
// channels on 132 multiprocessors, each block walking its channel alone; on
// an H200, ResNet-18's batch-norm sums took 20 times a read of their input,
// a fifth of the training step.) Fixed splits and fixed orders: an input
// gives the same bits on every run. Indices within a block are 32-bit (its
// span of samples times inner fits: batch_norm_splits sees to it). In NHWC
// a channel's elements are C apart, so a block's reads are not coalesced:
// correct, not tuned, until NHWC has been measured on a GPU.
__device__ inline int64_t split_begin(int64_t N, int64_t S, int64_t s) { return N * s / S; }

// Two passes (sums, then squared deviations from the mean) rather than
// E[x^2] - E[x]^2, which cancels badly for inputs far from zero: center
// null sums x, else (x - center[c])^2.
template <typename T>
__global__ void batch_norm_partial_kernel(const T* x, int64_t N, int64_t C, int64_t inner, int64_t S,
                                          const float* center, float* partial, TensorLayout layout) {
  const int64_t c = blockIdx.x / S, s = blockIdx.x % S;
  const int64_t n0 = split_begin(N, S, s);
  const uint32_t span = static_cast<uint32_t>((split_begin(N, S, s + 1) - n0) * inner);
  const uint32_t plane = static_cast<uint32_t>(inner);
  const float m = center != nullptr ? center[c] : 0.0f;
  const int64_t step = layout_plane_step(layout, C);
  float acc = 0.0f;
  for (uint32_t j = threadIdx.x; j < span; j += blockDim.x) {
    const uint32_t dn = j / plane, i = j - dn * plane;
    const float v = load_float(x, layout_plane_base(layout, n0 + dn, c, C, inner) + i * step);
    acc += center != nullptr ? (v - m) * (v - m) : v;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void batch_norm_mean_kernel(const float* partial, int64_t C, int64_t S, float count, float* mean) {
  for (int64_t c = first_index(); c < C; c += grid_stride()) {
    float sum = 0.0f;
    for (int64_t s = 0; s < S; ++s) sum += partial[c * S + s];
    mean[c] = sum / count;
  }
}

__global__ void batch_norm_variance_kernel(const float* partial, int64_t C, int64_t S, float count, float momentum,
                                           float unbias, const float* mean, float* var, float* running_mean,
                                           float* running_var) {
  for (int64_t c = first_index(); c < C; c += grid_stride()) {
    float sum = 0.0f;
    for (int64_t s = 0; s < S; ++s) sum += partial[c * S + s];
    const float v = sum / count;
    var[c] = v;
    running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mean[c];
    running_var[c] = (1.0f - momentum) * running_var[c] + momentum * v * unbias;
  }
}

// The elementwise passes index in 32 bits when the tensor allows (64-bit
// division costs far more than the element's load).
template <typename T, typename Index>
__global__ void batch_norm_apply_kernel(const T* x, const float* gamma, const float* beta, const float* mean,
                                        const float* var, float eps, Index total, Index C, Index inner, T* y,
                                        TensorLayout layout) {
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index c = layout_channel(layout, i, C, inner);
    const float inv_std = 1.0f / sqrtf(var[c] + eps);
    store_float(y, static_cast<int64_t>(i), gamma[c] * (load_float(x, static_cast<int64_t>(i)) - mean[c]) * inv_std +
                                                beta[c]);
  }
}

// Per (channel, split): the sums of dy and of dy * (x - mean), side by side.
template <typename T>
__global__ void batch_norm_backward_partial_kernel(const T* x, const T* dy, const float* mean, int64_t N, int64_t C,
                                                   int64_t inner, int64_t S, float* partial, TensorLayout layout) {
  const int64_t c = blockIdx.x / S, s = blockIdx.x % S;
  const int64_t n0 = split_begin(N, S, s);
  const uint32_t span = static_cast<uint32_t>((split_begin(N, S, s + 1) - n0) * inner);
  const uint32_t plane = static_cast<uint32_t>(inner);
  const float m = mean[c];
  const int64_t step = layout_plane_step(layout, C);
  float sum_dy = 0.0f, sum_dy_xc = 0.0f;
  for (uint32_t j = threadIdx.x; j < span; j += blockDim.x) {
    const uint32_t dn = j / plane, i = j - dn * plane;
    const int64_t at = layout_plane_base(layout, n0 + dn, c, C, inner) + i * step;
    const float g = load_float(dy, at);
    sum_dy += g;
    sum_dy_xc += g * (load_float(x, at) - m);
  }
  sum_dy = block_sum(sum_dy);
  sum_dy_xc = block_sum(sum_dy_xc);
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = sum_dy;
    partial[2 * blockIdx.x + 1] = sum_dy_xc;
  }
}

__global__ void batch_norm_backward_sums_kernel(const float* partial, int64_t C, int64_t S, const float* var,
                                                float eps, float* dgamma, float* dbeta) {
  for (int64_t c = first_index(); c < C; c += grid_stride()) {
    float sum_dy = 0.0f, sum_dy_xc = 0.0f;
    for (int64_t s = 0; s < S; ++s) {
      sum_dy += partial[2 * (c * S + s)];
      sum_dy_xc += partial[2 * (c * S + s) + 1];
    }
    dbeta[c] = sum_dy;
    dgamma[c] = sum_dy_xc / sqrtf(var[c] + eps);
  }
}

template <typename T, typename Index>
__global__ void batch_norm_backward_data_kernel(const T* x, const T* dy, const float* gamma, const float* mean,
                                                const float* var, const float* dgamma, const float* dbeta, float eps,
                                                Index total, Index C, Index inner, float count, T* dx,
                                                TensorLayout layout) {
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index c = layout_channel(layout, i, C, inner);
    const float inv_std = 1.0f / sqrtf(var[c] + eps);
    const auto at = static_cast<int64_t>(i);
    const float xhat = (load_float(x, at) - mean[c]) * inv_std;
    store_float(dx, at, gamma[c] * inv_std * (load_float(dy, at) - dbeta[c] / count - xhat * dgamma[c] / count));
  }
}

}  // namespace

int64_t batch_norm_splits(int64_t N, int64_t C, int64_t inner) {
  // About 4 blocks per multiprocessor of the largest GPUs, each summing at
  // least 4096 elements, and no block spanning 2^31 elements or more.
  constexpr int64_t kTargetBlocks = 512;
  constexpr int64_t kMinPerBlock = 4096;
  constexpr int64_t kMaxPerBlock = int64_t{1} << 31;
  const int64_t count = N * inner;
  int64_t splits = std::min({N, std::max<int64_t>(1, count / kMinPerBlock), std::max<int64_t>(1, kTargetBlocks / C)});
  splits = std::max<int64_t>(splits, (count + kMaxPerBlock - 1) / kMaxPerBlock);
  return std::clamp<int64_t>(splits, 1, N);
}

size_t batch_norm_scratch(int64_t N, int64_t C, int64_t inner) {
  return static_cast<size_t>(2 * C * batch_norm_splits(N, C, inner));
}

namespace {

// Launches an elementwise batch-norm kernel with 32-bit indices when the
// tensor's element count allows.
template <typename Launch>
void with_index_type(int64_t total, Launch launch) {
  if (total <= static_cast<int64_t>(UINT32_MAX) / 2) {
    launch(uint32_t{});
  } else {
    launch(int64_t{});
  }
}

}  // namespace

void batch_norm_statistics(cudaStream_t stream, core::DType dtype, const void* x, int64_t N, int64_t C,
                           int64_t inner, float momentum, float unbias, float* mean, float* var, float* running_mean,
                           float* running_var, float* scratch, TensorLayout layout) {
  dispatch_activation_dtype(dtype, "batch_norm_statistics", [&](auto tag) {
    using T = decltype(tag);
    const int64_t S = batch_norm_splits(N, C, inner);
    const float count = static_cast<float>(N * inner);
    const auto blocks = static_cast<unsigned>(C * S);
    batch_norm_partial_kernel<T><<<blocks, kReduceBlock, 0, stream>>>(typed<T>(x), N, C, inner, S, nullptr, scratch,
                                                                      layout);
    check_launch();
    batch_norm_mean_kernel<<<blocks_for(C), kBlockSize, 0, stream>>>(scratch, C, S, count, mean);
    check_launch();
    batch_norm_partial_kernel<T><<<blocks, kReduceBlock, 0, stream>>>(typed<T>(x), N, C, inner, S, mean, scratch, layout);
    check_launch();
    batch_norm_variance_kernel<<<blocks_for(C), kBlockSize, 0, stream>>>(scratch, C, S, count, momentum, unbias,
                                                                             mean, var, running_mean, running_var);
    check_launch();
  });
}

void batch_norm_apply(cudaStream_t stream, core::DType dtype, const void* x, const float* gamma, const float* beta,
                      const float* mean, const float* var, float eps, int64_t N, int64_t C, int64_t inner, void* y,
                      TensorLayout layout) {
  dispatch_activation_dtype(dtype, "batch_norm_apply", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = N * C * inner;
    with_index_type(total, [&](auto index) {
      using Index = decltype(index);
      batch_norm_apply_kernel<T, Index><<<blocks_for(total), kBlockSize, 0, stream>>>(
          typed<T>(x), gamma, beta, mean, var, eps, static_cast<Index>(total), static_cast<Index>(C),
          static_cast<Index>(inner), typed<T>(y), layout);
    });
    check_launch();
  });
}

void batch_norm_backward(cudaStream_t stream, core::DType dtype, const void* x, const void* dy, const float* gamma,
                         const float* mean, const float* var, float eps, int64_t N, int64_t C, int64_t inner,
                         void* dx, float* dgamma, float* dbeta, float* scratch, TensorLayout layout) {
  dispatch_activation_dtype(dtype, "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t S = batch_norm_splits(N, C, inner);
    batch_norm_backward_partial_kernel<T><<<static_cast<unsigned>(C * S), kReduceBlock, 0, stream>>>(
        typed<T>(x), typed<T>(dy), mean, N, C, inner, S, scratch, layout);
    check_launch();
    batch_norm_backward_sums_kernel<<<blocks_for(C), kBlockSize, 0, stream>>>(scratch, C, S, var, eps, dgamma,
                                                                                  dbeta);
    check_launch();
    const int64_t total = N * C * inner;
    with_index_type(total, [&](auto index) {
      using Index = decltype(index);
      batch_norm_backward_data_kernel<T, Index><<<blocks_for(total), kBlockSize, 0, stream>>>(
          typed<T>(x), typed<T>(dy), gamma, mean, var, dgamma, dbeta, eps, static_cast<Index>(total),
          static_cast<Index>(C), static_cast<Index>(inner), static_cast<float>(N * inner), typed<T>(dx),
          layout);
    });
    check_launch();
  });
}

}  // namespace dt::ops::cuda::kernels
