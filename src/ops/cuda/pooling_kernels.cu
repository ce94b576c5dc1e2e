// Max, average and global average pooling, forward and backward, in NCHW or
// NHWC: one thread per element in memory order, its (n, c, h, w) from
// layout_coords and its plane's elements at layout_plane_base + i * step
// (ops/layout_index.h). Launchers in ops/cuda/layer_kernels.h.
#include "ops/cuda/layer_kernels.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/element_access.cuh"
#include "ops/cuda/layer_kernel_launch.cuh"

namespace dt::ops::cuda::kernels {

namespace {

// Where output or input plane positions of (n, c) live in this layout.
struct PlaneAt {
  int64_t base, step;
};
__device__ inline PlaneAt plane_at(const PoolShape& s, const LayoutCoords& at, int64_t plane) {
  return {layout_plane_base(s.layout, at.n, at.c, s.C, plane), layout_plane_step(s.layout, s.C)};
}

template <typename T>
__global__ void max_pool_forward_kernel(PoolShape s, const T* x, T* y, int32_t* argmax) {
  const int64_t total = s.planes * s.P * s.Q;
  for (int64_t o = first_index(); o < total; o += grid_stride()) {
    const LayoutCoords at = layout_coords(s.layout, o, s.C, s.P, s.Q);
    const int64_t oh = at.h, ow = at.w;
    const PlaneAt in = plane_at(s, at, s.H * s.W);
    const T* xp = x + in.base;
    const int64_t h0 = oh * s.stride_h - s.pad_h, w0 = ow * s.stride_w - s.pad_w;
    const int64_t hs = max(h0, int64_t{0}), he = min(h0 + s.kernel_h, s.H);
    const int64_t ws = max(w0, int64_t{0}), we = min(w0 + s.kernel_w, s.W);
    int64_t best_at = hs * s.W + ws;
    float best = load_float(xp, best_at * in.step);
    bool found_nan = isnan(best);
    for (int64_t h = hs; h < he && !found_nan; ++h) {
      for (int64_t w = ws; w < we; ++w) {
        const float v = load_float(xp, (h * s.W + w) * in.step);
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
    const LayoutCoords at = layout_coords(s.layout, o, s.C, s.P, s.Q);
    const int64_t oh = at.h, ow = at.w;
    const PlaneAt in = plane_at(s, at, s.H * s.W);
    const T* xp = x + in.base;
    const int64_t h0 = oh * s.stride_h - s.pad_h, w0 = ow * s.stride_w - s.pad_w;
    float sum = 0.0f;
    for (int64_t h = max(h0, int64_t{0}); h < min(h0 + s.kernel_h, s.H); ++h) {
      for (int64_t w = max(w0, int64_t{0}); w < min(w0 + s.kernel_w, s.W); ++w) {
        sum += load_float(xp, (h * s.W + w) * in.step);
      }
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
    const LayoutCoords c = layout_coords(s.layout, i, s.C, s.H, s.W);
    const int64_t h = c.h, w = c.w;
    const int64_t at = h * s.W + w;
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    covering(h, s.kernel_h, s.stride_h, s.pad_h, s.P, &oh_lo, &oh_hi);
    covering(w, s.kernel_w, s.stride_w, s.pad_w, s.Q, &ow_lo, &ow_hi);
    const PlaneAt out = plane_at(s, c, s.P * s.Q);
    const T* dyp = dy + out.base;
    const int32_t* ap = argmax + out.base;
    float sum = 0.0f;
    for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
      for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
        const int64_t o = (oh * s.Q + ow) * out.step;
        if (ap[o] == at) sum += load_float(dyp, o);
      }
    }
    store_float(dx, i, sum);
  }
}

template <typename T>
__global__ void avg_pool_backward_kernel(PoolShape s, bool count_include_pad, const T* dy, T* dx) {
  const int64_t total = s.planes * s.H * s.W;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const LayoutCoords c = layout_coords(s.layout, i, s.C, s.H, s.W);
    const int64_t h = c.h, w = c.w;
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    covering(h, s.kernel_h, s.stride_h, s.pad_h, s.P, &oh_lo, &oh_hi);
    covering(w, s.kernel_w, s.stride_w, s.pad_w, s.Q, &ow_lo, &ow_hi);
    const PlaneAt out = plane_at(s, c, s.P * s.Q);
    const T* dyp = dy + out.base;
    float sum = 0.0f;
    for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
      for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
        sum += load_float(dyp, (oh * s.Q + ow) * out.step) / avg_divisor(s, count_include_pad, oh, ow);
      }
    }
    store_float(dx, i, sum);
  }
}

// One block per (n, c) row; in NHWC its reads are C apart.
template <typename T>
__global__ void global_avg_pool_forward_kernel(int64_t plane, const T* x, T* y, int64_t C, TensorLayout layout) {
  const int64_t row = blockIdx.x;
  const T* xp = x + layout_plane_base(layout, row / C, row % C, C, plane);
  const int64_t step = layout_plane_step(layout, C);
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) acc += load_float(xp, i * step);
  acc = block_sum(acc);
  if (threadIdx.x == 0) store_float(y, blockIdx.x, acc / static_cast<float>(plane));
}

template <typename T>
__global__ void global_avg_pool_backward_kernel(int64_t total, int64_t plane, const T* dy, T* dx, int64_t C,
                                                TensorLayout layout) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    // The row n * C + c of element i, its plane taken as plane x 1.
    const LayoutCoords at = layout_coords(layout, i, C, plane, 1);
    store_float(dx, i, load_float(dy, at.n * C + at.c) / static_cast<float>(plane));
  }
}

}  // namespace

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
                             void* y, int64_t C, TensorLayout layout) {
  dispatch_activation_dtype(dtype, "global_avg_pool_forward", [&](auto tag) {
    using T = decltype(tag);
    global_avg_pool_forward_kernel<T><<<static_cast<unsigned>(rows), kReduceBlock, 0, stream>>>(
        plane, typed<T>(x), typed<T>(y), C, layout);
    check_launch();
  });
}

void global_avg_pool_backward(cudaStream_t stream, core::DType dtype, int64_t rows, int64_t plane, const void* dy,
                              void* dx, int64_t C, TensorLayout layout) {
  dispatch_activation_dtype(dtype, "global_avg_pool_backward", [&](auto tag) {
    using T = decltype(tag);
    global_avg_pool_backward_kernel<T><<<blocks_for(rows * plane), kBlockSize, 0, stream>>>(
        rows * plane, plane, typed<T>(dy), typed<T>(dx), C, layout);
    check_launch();
  });
}

}  // namespace dt::ops::cuda::kernels
