#include "ops/cuda/layer_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "ops/cuda/element_access.cuh"

namespace dt::ops::cuda::kernels {

namespace {

constexpr unsigned kBlockSize = 256;
// As in tensor_math.cu: enough resident threads for the largest GPUs; grid-
// stride loops cover longer arrays.
constexpr int64_t kMaxBlocks = 4096;
// Per-channel and per-row reductions run one block per channel or row; the
// grid's x extent allows 2^31 - 1 blocks, far beyond any channel count.
constexpr unsigned kReduceBlock = 256;

unsigned blocks_for(int64_t count) {
  const int64_t blocks = (count + kBlockSize - 1) / kBlockSize;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}

__device__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

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

void check_launch() { DT_CUDA_CHECK(cudaGetLastError()); }

// The launchers' untyped arrays as the kernels' element type.
template <typename T>
T* typed(void* p) {
  return static_cast<T*>(p);
}
template <typename T>
const T* typed(const void* p) {
  return static_cast<const T*>(p);
}

// ---- bias ---------------------------------------------------------------------

template <typename T>
__global__ void add_channel_bias_kernel(T* y, const float* bias, int64_t total, int64_t C, int64_t inner) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    store_float(y, i, load_float(y, i) + bias[(i / inner) % C]);
  }
}

template <typename T>
__global__ void sum_per_channel_kernel(const T* x, float* out, int64_t N, int64_t C, int64_t inner) {
  const int64_t c = blockIdx.x;
  float acc = 0.0f;
  for (int64_t j = threadIdx.x; j < N * inner; j += blockDim.x) {
    const int64_t n = j / inner, i = j - n * inner;
    acc += load_float(x, (n * C + c) * inner + i);
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) out[c] = acc;
}

// ---- pooling ----------------------------------------------------------------

template <typename T>
__global__ void max_pool_forward_kernel(PoolShape s, const T* x, T* y, int32_t* argmax) {
  const int64_t total = s.planes * s.P * s.Q;
  for (int64_t o = first_index(); o < total; o += grid_stride()) {
    const int64_t plane = o / (s.P * s.Q), oh = (o / s.Q) % s.P, ow = o % s.Q;
    const T* xp = x + plane * s.H * s.W;
    const int64_t h0 = oh * s.stride_h - s.pad_h, w0 = ow * s.stride_w - s.pad_w;
    const int64_t hs = max(h0, int64_t{0}), he = min(h0 + s.kernel_h, s.H);
    const int64_t ws = max(w0, int64_t{0}), we = min(w0 + s.kernel_w, s.W);
    int64_t best_at = hs * s.W + ws;
    float best = load_float(xp, best_at);
    bool found_nan = isnan(best);
    for (int64_t h = hs; h < he && !found_nan; ++h) {
      for (int64_t w = ws; w < we; ++w) {
        const float v = load_float(xp, h * s.W + w);
        if (isnan(v)) {
          best_at = h * s.W + w;
          best = v;
          found_nan = true;
          break;
        }
        if (v > best) {
          best_at = h * s.W + w;
          best = v;
        }
      }
    }
    // The maximum is one of the inputs: storing it back loses nothing.
    store_float(y, o, best);
    if (argmax != nullptr) argmax[o] = static_cast<int32_t>(best_at);
  }
}

__device__ float avg_divisor(const PoolShape& s, bool count_include_pad, int64_t oh, int64_t ow) {
  if (count_include_pad) return static_cast<float>(s.kernel_h * s.kernel_w);
  const int64_t h0 = oh * s.stride_h - s.pad_h, w0 = ow * s.stride_w - s.pad_w;
  const int64_t rows = min(h0 + s.kernel_h, s.H) - max(h0, int64_t{0});
  const int64_t cols = min(w0 + s.kernel_w, s.W) - max(w0, int64_t{0});
  return static_cast<float>(rows * cols);
}

template <typename T>
__global__ void avg_pool_forward_kernel(PoolShape s, bool count_include_pad, const T* x, T* y) {
  const int64_t total = s.planes * s.P * s.Q;
  for (int64_t o = first_index(); o < total; o += grid_stride()) {
    const int64_t plane = o / (s.P * s.Q), oh = (o / s.Q) % s.P, ow = o % s.Q;
    const T* xp = x + plane * s.H * s.W;
    const int64_t h0 = oh * s.stride_h - s.pad_h, w0 = ow * s.stride_w - s.pad_w;
    float sum = 0.0f;
    for (int64_t h = max(h0, int64_t{0}); h < min(h0 + s.kernel_h, s.H); ++h) {
      for (int64_t w = max(w0, int64_t{0}); w < min(w0 + s.kernel_w, s.W); ++w) sum += load_float(xp, h * s.W + w);
    }
    store_float(y, o, sum / avg_divisor(s, count_include_pad, oh, ow));
  }
}

// The outputs whose window covers input row h: oh * stride - pad <= h <
// oh * stride - pad + kernel. Gathering per input needs no atomics.
__device__ void covering(int64_t h, int64_t kernel, int64_t stride, int64_t pad, int64_t outs, int64_t* lo,
                         int64_t* hi) {
  const int64_t top = h + pad;
  *lo = top < kernel ? 0 : (top - kernel) / stride + 1;
  *hi = min(top / stride, outs - 1);
}

// Overlapping windows (stride < kernel) may share an argmax. Gathered per
// input like the average: each input sums, in float, the gradients of the
// covering outputs whose argmax it is, and is stored once. No atomics, so
// the result is deterministic and, in 16 bits, rounded once.
template <typename T>
__global__ void max_pool_backward_kernel(PoolShape s, const T* dy, const int32_t* argmax, T* dx) {
  const int64_t total = s.planes * s.H * s.W;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t plane = i / (s.H * s.W), h = (i / s.W) % s.H, w = i % s.W;
    const int64_t at = h * s.W + w;
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    covering(h, s.kernel_h, s.stride_h, s.pad_h, s.P, &oh_lo, &oh_hi);
    covering(w, s.kernel_w, s.stride_w, s.pad_w, s.Q, &ow_lo, &ow_hi);
    const T* dyp = dy + plane * s.P * s.Q;
    const int32_t* ap = argmax + plane * s.P * s.Q;
    float sum = 0.0f;
    for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
      for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
        if (ap[oh * s.Q + ow] == at) sum += load_float(dyp, oh * s.Q + ow);
      }
    }
    store_float(dx, i, sum);
  }
}

template <typename T>
__global__ void avg_pool_backward_kernel(PoolShape s, bool count_include_pad, const T* dy, T* dx) {
  const int64_t total = s.planes * s.H * s.W;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t plane = i / (s.H * s.W), h = (i / s.W) % s.H, w = i % s.W;
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    covering(h, s.kernel_h, s.stride_h, s.pad_h, s.P, &oh_lo, &oh_hi);
    covering(w, s.kernel_w, s.stride_w, s.pad_w, s.Q, &ow_lo, &ow_hi);
    const T* dyp = dy + plane * s.P * s.Q;
    float sum = 0.0f;
    for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
      for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
        sum += load_float(dyp, oh * s.Q + ow) / avg_divisor(s, count_include_pad, oh, ow);
      }
    }
    store_float(dx, i, sum);
  }
}

template <typename T>
__global__ void global_avg_pool_forward_kernel(int64_t plane, const T* x, T* y) {
  const T* xp = x + static_cast<int64_t>(blockIdx.x) * plane;
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) acc += load_float(xp, i);
  acc = block_sum(acc);
  if (threadIdx.x == 0) store_float(y, blockIdx.x, acc / static_cast<float>(plane));
}

template <typename T>
__global__ void global_avg_pool_backward_kernel(int64_t total, int64_t plane, const T* dy, T* dx) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    store_float(dx, i, load_float(dy, i / plane) / static_cast<float>(plane));
  }
}

// ---- batch norm -------------------------------------------------------------

// Per-channel sums in (channel, split) blocks: block b sums channel b / S
// over samples [N * s / S, N * (s + 1) / S), s = b % S, and a second kernel
// adds each channel's S partials in split order, one thread per channel.
// (One block per channel, as before, left most of a large GPU idle: 64
// channels on 132 multiprocessors, each block walking its channel alone; on
// an H200, ResNet-18's batch-norm sums took 20 times a read of their input,
// a fifth of the training step.) Fixed splits and fixed orders: an input
// gives the same bits on every run. Indices within a block are 32-bit (its
// span of samples times inner fits: batch_norm_splits sees to it).
__device__ inline int64_t split_begin(int64_t N, int64_t S, int64_t s) { return N * s / S; }

// Two passes (sums, then squared deviations from the mean) rather than
// E[x^2] - E[x]^2, which cancels badly for inputs far from zero: center
// null sums x, else (x - center[c])^2.
template <typename T>
__global__ void batch_norm_partial_kernel(const T* x, int64_t N, int64_t C, int64_t inner, int64_t S,
                                          const float* center, float* partial) {
  const int64_t c = blockIdx.x / S, s = blockIdx.x % S;
  const int64_t n0 = split_begin(N, S, s);
  const uint32_t span = static_cast<uint32_t>((split_begin(N, S, s + 1) - n0) * inner);
  const uint32_t plane = static_cast<uint32_t>(inner);
  const float m = center != nullptr ? center[c] : 0.0f;
  float acc = 0.0f;
  for (uint32_t j = threadIdx.x; j < span; j += blockDim.x) {
    const uint32_t dn = j / plane, i = j - dn * plane;
    const float v = load_float(x, ((n0 + dn) * C + c) * inner + i);
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
                                        const float* var, float eps, Index total, Index C, Index inner, T* y) {
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index c = (i / inner) % C;
    const float inv_std = 1.0f / sqrtf(var[c] + eps);
    store_float(y, static_cast<int64_t>(i), gamma[c] * (load_float(x, static_cast<int64_t>(i)) - mean[c]) * inv_std +
                                                beta[c]);
  }
}

// Per (channel, split): the sums of dy and of dy * (x - mean), side by side.
template <typename T>
__global__ void batch_norm_backward_partial_kernel(const T* x, const T* dy, const float* mean, int64_t N, int64_t C,
                                                   int64_t inner, int64_t S, float* partial) {
  const int64_t c = blockIdx.x / S, s = blockIdx.x % S;
  const int64_t n0 = split_begin(N, S, s);
  const uint32_t span = static_cast<uint32_t>((split_begin(N, S, s + 1) - n0) * inner);
  const uint32_t plane = static_cast<uint32_t>(inner);
  const float m = mean[c];
  float sum_dy = 0.0f, sum_dy_xc = 0.0f;
  for (uint32_t j = threadIdx.x; j < span; j += blockDim.x) {
    const uint32_t dn = j / plane, i = j - dn * plane;
    const int64_t at = ((n0 + dn) * C + c) * inner + i;
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
                                                Index total, Index C, Index inner, float count, T* dx) {
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index c = (i / inner) % C;
    const float inv_std = 1.0f / sqrtf(var[c] + eps);
    const auto at = static_cast<int64_t>(i);
    const float xhat = (load_float(x, at) - mean[c]) * inv_std;
    store_float(dx, at, gamma[c] * inv_std * (load_float(dy, at) - dbeta[c] / count - xhat * dgamma[c] / count));
  }
}

// ---- activations --------------------------------------------------------------

// The formulas of oneDNN's eltwise kernels that the CPU ops use: relu as
// x > 0 ? x : x * 0 (NaN stays NaN), derivatives from the output.
template <typename T>
__global__ void activation_forward_kernel(ActivationKind kind, const T* x, T* y, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const float v = load_float(x, i);
    float out = 0.0f;
    switch (kind) {
      case ActivationKind::kRelu: out = v > 0.0f ? v : v * 0.0f; break;
      case ActivationKind::kSigmoid: out = 1.0f / (1.0f + expf(-v)); break;
      case ActivationKind::kTanh: out = tanhf(v); break;
    }
    store_float(y, i, out);
  }
}

template <typename T>
__global__ void activation_backward_kernel(ActivationKind kind, const T* y, const T* dy, T* dx, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const float out = load_float(y, i), g = load_float(dy, i);
    float d = 0.0f;
    switch (kind) {
      case ActivationKind::kRelu: d = out > 0.0f ? g : g * 0.0f; break;
      case ActivationKind::kSigmoid: d = g * out * (1.0f - out); break;
      case ActivationKind::kTanh: d = g * (1.0f - out) * (1.0f + out); break;
    }
    store_float(dx, i, d);
  }
}

// ---- softmax cross-entropy ------------------------------------------------------

// One warp per row: classes are few (10 for Fashion-MNIST, 1000 for
// ImageNet), so a warp covers a row in a handful of steps.
constexpr unsigned kWarp = 32;

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename Label>
__global__ void softmax_cross_entropy_forward_kernel(const float* logits, const Label* labels, int64_t classes,
                                                     float* prob, int64_t* labels_out, double* row_loss,
                                                     unsigned long long* bad_row) {
  const int64_t r = blockIdx.x;
  const float* row = logits + r * classes;
  float* p = prob + r * classes;
  float max = -INFINITY;
  for (int64_t j = threadIdx.x; j < classes; j += kWarp) max = fmaxf(max, row[j]);
  max = warp_max(max);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += kWarp) {
    const float e = expf(row[j] - max);
    p[j] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  const float inv = 1.0f / sum;
  for (int64_t j = threadIdx.x; j < classes; j += kWarp) p[j] *= inv;
  if (threadIdx.x != 0) return;
  const int64_t label = static_cast<int64_t>(labels[r]);
  if (label < 0 || label >= classes) {
    atomicMin(bad_row, static_cast<unsigned long long>(r));
    labels_out[r] = 0;
    row_loss[r] = 0.0;
    return;
  }
  labels_out[r] = label;
  // From the shifted logits, not log(p): p may underflow to 0.
  row_loss[r] = static_cast<double>(logf(sum)) - static_cast<double>(row[label] - max);
}

__global__ void sum_doubles_kernel(const double* values, int64_t count, double* total) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += values[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *total = acc;
}

__global__ void softmax_cross_entropy_backward_kernel(const float* prob, const int64_t* labels, int64_t total,
                                                      int64_t classes, float scale, float* dlogits) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t r = i / classes, j = i - r * classes;
    const float d = prob[i] * scale;
    dlogits[i] = j == labels[r] ? d - scale : d;
  }
}

}  // namespace

// Each launcher picks the kernel for the activations' dtype; T is the device
// element type (float, __half, __nv_bfloat16).

void add_channel_bias(cudaStream_t stream, core::DType dtype, void* y, const float* bias, int64_t N, int64_t C,
                      int64_t inner) {
  dispatch_activation_dtype(dtype, "add_channel_bias", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = N * C * inner;
    add_channel_bias_kernel<T><<<blocks_for(total), kBlockSize, 0, stream>>>(typed<T>(y), bias, total, C, inner);
    check_launch();
  });
}

void sum_per_channel(cudaStream_t stream, core::DType dtype, const void* x, float* out, int64_t N, int64_t C,
                     int64_t inner) {
  dispatch_activation_dtype(dtype, "sum_per_channel", [&](auto tag) {
    using T = decltype(tag);
    sum_per_channel_kernel<T><<<static_cast<unsigned>(C), kReduceBlock, 0, stream>>>(typed<T>(x), out, N, C, inner);
    check_launch();
  });
}

void max_pool_forward(cudaStream_t stream, core::DType dtype, const PoolShape& shape, const void* x, void* y,
                      int32_t* argmax) {
  dispatch_activation_dtype(dtype, "max_pool_forward", [&](auto tag) {
    using T = decltype(tag);
    max_pool_forward_kernel<T><<<blocks_for(shape.planes * shape.P * shape.Q), kBlockSize, 0, stream>>>(
        shape, typed<T>(x), typed<T>(y), argmax);
    check_launch();
  });
}

void max_pool_backward(cudaStream_t stream, core::DType dtype, const PoolShape& shape, const void* dy,
                       const int32_t* argmax, void* dx) {
  dispatch_activation_dtype(dtype, "max_pool_backward", [&](auto tag) {
    using T = decltype(tag);
    max_pool_backward_kernel<T><<<blocks_for(shape.planes * shape.H * shape.W), kBlockSize, 0, stream>>>(
        shape, typed<T>(dy), argmax, typed<T>(dx));
    check_launch();
  });
}

void avg_pool_forward(cudaStream_t stream, core::DType dtype, const PoolShape& shape, bool count_include_pad,
                      const void* x, void* y) {
  dispatch_activation_dtype(dtype, "avg_pool_forward", [&](auto tag) {
    using T = decltype(tag);
    avg_pool_forward_kernel<T><<<blocks_for(shape.planes * shape.P * shape.Q), kBlockSize, 0, stream>>>(
        shape, count_include_pad, typed<T>(x), typed<T>(y));
    check_launch();
  });
}

void avg_pool_backward(cudaStream_t stream, core::DType dtype, const PoolShape& shape, bool count_include_pad,
                       const void* dy, void* dx) {
  dispatch_activation_dtype(dtype, "avg_pool_backward", [&](auto tag) {
    using T = decltype(tag);
    avg_pool_backward_kernel<T><<<blocks_for(shape.planes * shape.H * shape.W), kBlockSize, 0, stream>>>(
        shape, count_include_pad, typed<T>(dy), typed<T>(dx));
    check_launch();
  });
}

void global_avg_pool_forward(cudaStream_t stream, core::DType dtype, int64_t rows, int64_t plane, const void* x,
                             void* y) {
  dispatch_activation_dtype(dtype, "global_avg_pool_forward", [&](auto tag) {
    using T = decltype(tag);
    global_avg_pool_forward_kernel<T><<<static_cast<unsigned>(rows), kReduceBlock, 0, stream>>>(
        plane, typed<T>(x), typed<T>(y));
    check_launch();
  });
}

void global_avg_pool_backward(cudaStream_t stream, core::DType dtype, int64_t rows, int64_t plane, const void* dy,
                              void* dx) {
  dispatch_activation_dtype(dtype, "global_avg_pool_backward", [&](auto tag) {
    using T = decltype(tag);
    global_avg_pool_backward_kernel<T><<<blocks_for(rows * plane), kBlockSize, 0, stream>>>(
        rows * plane, plane, typed<T>(dy), typed<T>(dx));
    check_launch();
  });
}

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
                           float* running_var, float* scratch) {
  dispatch_activation_dtype(dtype, "batch_norm_statistics", [&](auto tag) {
    using T = decltype(tag);
    const int64_t S = batch_norm_splits(N, C, inner);
    const float count = static_cast<float>(N * inner);
    const auto blocks = static_cast<unsigned>(C * S);
    batch_norm_partial_kernel<T><<<blocks, kReduceBlock, 0, stream>>>(typed<T>(x), N, C, inner, S, nullptr, scratch);
    check_launch();
    batch_norm_mean_kernel<<<blocks_for(C), kBlockSize, 0, stream>>>(scratch, C, S, count, mean);
    check_launch();
    batch_norm_partial_kernel<T><<<blocks, kReduceBlock, 0, stream>>>(typed<T>(x), N, C, inner, S, mean, scratch);
    check_launch();
    batch_norm_variance_kernel<<<blocks_for(C), kBlockSize, 0, stream>>>(scratch, C, S, count, momentum, unbias,
                                                                             mean, var, running_mean, running_var);
    check_launch();
  });
}

void batch_norm_apply(cudaStream_t stream, core::DType dtype, const void* x, const float* gamma, const float* beta,
                      const float* mean, const float* var, float eps, int64_t N, int64_t C, int64_t inner, void* y) {
  dispatch_activation_dtype(dtype, "batch_norm_apply", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = N * C * inner;
    with_index_type(total, [&](auto index) {
      using Index = decltype(index);
      batch_norm_apply_kernel<T, Index><<<blocks_for(total), kBlockSize, 0, stream>>>(
          typed<T>(x), gamma, beta, mean, var, eps, static_cast<Index>(total), static_cast<Index>(C),
          static_cast<Index>(inner), typed<T>(y));
    });
    check_launch();
  });
}

void batch_norm_backward(cudaStream_t stream, core::DType dtype, const void* x, const void* dy, const float* gamma,
                         const float* mean, const float* var, float eps, int64_t N, int64_t C, int64_t inner,
                         void* dx, float* dgamma, float* dbeta, float* scratch) {
  dispatch_activation_dtype(dtype, "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t S = batch_norm_splits(N, C, inner);
    batch_norm_backward_partial_kernel<T><<<static_cast<unsigned>(C * S), kReduceBlock, 0, stream>>>(
        typed<T>(x), typed<T>(dy), mean, N, C, inner, S, scratch);
    check_launch();
    batch_norm_backward_sums_kernel<<<blocks_for(C), kBlockSize, 0, stream>>>(scratch, C, S, var, eps, dgamma,
                                                                                  dbeta);
    check_launch();
    const int64_t total = N * C * inner;
    with_index_type(total, [&](auto index) {
      using Index = decltype(index);
      batch_norm_backward_data_kernel<T, Index><<<blocks_for(total), kBlockSize, 0, stream>>>(
          typed<T>(x), typed<T>(dy), gamma, mean, var, dgamma, dbeta, eps, static_cast<Index>(total),
          static_cast<Index>(C), static_cast<Index>(inner), static_cast<float>(N * inner), typed<T>(dx));
    });
    check_launch();
  });
}

void activation_forward(cudaStream_t stream, core::DType dtype, ActivationKind kind, const void* x, void* y,
                        int64_t count) {
  dispatch_activation_dtype(dtype, "activation_forward", [&](auto tag) {
    using T = decltype(tag);
    activation_forward_kernel<T><<<blocks_for(count), kBlockSize, 0, stream>>>(kind, typed<T>(x), typed<T>(y), count);
    check_launch();
  });
}

void activation_backward(cudaStream_t stream, core::DType dtype, ActivationKind kind, const void* y, const void* dy,
                         void* dx, int64_t count) {
  dispatch_activation_dtype(dtype, "activation_backward", [&](auto tag) {
    using T = decltype(tag);
    activation_backward_kernel<T><<<blocks_for(count), kBlockSize, 0, stream>>>(kind, typed<T>(y), typed<T>(dy),
                                                                                typed<T>(dx), count);
    check_launch();
  });
}

void softmax_cross_entropy_forward(cudaStream_t stream, const float* logits, const int32_t* labels, int64_t N,
                                   int64_t classes, float* prob, int64_t* labels_out, double* row_loss,
                                   unsigned long long* bad_row) {
  softmax_cross_entropy_forward_kernel<<<static_cast<unsigned>(N), kWarp, 0, stream>>>(
      logits, labels, classes, prob, labels_out, row_loss, bad_row);
  check_launch();
}

void softmax_cross_entropy_forward(cudaStream_t stream, const float* logits, const int64_t* labels, int64_t N,
                                   int64_t classes, float* prob, int64_t* labels_out, double* row_loss,
                                   unsigned long long* bad_row) {
  softmax_cross_entropy_forward_kernel<<<static_cast<unsigned>(N), kWarp, 0, stream>>>(
      logits, labels, classes, prob, labels_out, row_loss, bad_row);
  check_launch();
}

void sum_doubles(cudaStream_t stream, const double* values, int64_t count, double* total) {
  sum_doubles_kernel<<<1, kReduceBlock, 0, stream>>>(values, count, total);
  check_launch();
}

void softmax_cross_entropy_backward(cudaStream_t stream, const float* prob, const int64_t* labels, int64_t N,
                                    int64_t classes, float scale, float* dlogits) {
  const int64_t total = N * classes;
  softmax_cross_entropy_backward_kernel<<<blocks_for(total), kBlockSize, 0, stream>>>(prob, labels, total, classes,
                                                                                      scale, dlogits);
  check_launch();
}

}  // namespace dt::ops::cuda::kernels
