#include "ops/cuda/dropout.h"

#include "core/cuda/grid_launch.cuh"
#include "ops/cuda/element_access.cuh"
#include "ops/dropout_mask.h"

namespace dt::ops::cuda {

namespace {

using core::cuda::first_index;
using core::cuda::grid_stride;

// Each element is scaled in float32 and rounded once to its storage type.
template <typename T>
__global__ void dropout_forward_kernel(const T* x, T* y, uint8_t* mask, size_t count, uint64_t key, double rate,
                                       float scale) {
  for (size_t i = first_index(); i < count; i += grid_stride()) {
    const bool keep = dropout_keeps(key, i, rate);
    mask[i] = keep ? 1 : 0;
    store_float(y, static_cast<int64_t>(i), keep ? load_float(x, static_cast<int64_t>(i)) * scale : 0.0f);
  }
}

template <typename T>
__global__ void dropout_backward_kernel(const T* dy, T* dx, const uint8_t* mask, size_t count, float scale) {
  for (size_t i = first_index(); i < count; i += grid_stride()) {
    store_float(dx, static_cast<int64_t>(i), mask[i] ? load_float(dy, static_cast<int64_t>(i)) * scale : 0.0f);
  }
}

// The same rounding as the CPU loop: 1 / (1 - rate) in double, then float.
float keep_scale(double rate) { return static_cast<float>(1.0 / (1.0 - rate)); }

}  // namespace

void dropout_forward(const core::Context& ctx, core::DType dtype, const void* x, void* y, uint8_t* mask,
                     size_t count, uint64_t key, double rate) {
  dispatch_activation_dtype(dtype, "dropout", [&](auto tag) {
    using T = decltype(tag);
    core::cuda::launch_grid(ctx, "dropout forward", count, dropout_forward_kernel<T>, static_cast<const T*>(x),
                            static_cast<T*>(y), mask, count, key, rate, keep_scale(rate));
  });
}

void dropout_backward(const core::Context& ctx, core::DType dtype, const void* dy, void* dx, const uint8_t* mask,
                      size_t count, double rate) {
  dispatch_activation_dtype(dtype, "dropout", [&](auto tag) {
    using T = decltype(tag);
    core::cuda::launch_grid(ctx, "dropout backward", count, dropout_backward_kernel<T>, static_cast<const T*>(dy),
                            static_cast<T*>(dx), mask, count, keep_scale(rate));
  });
}

}  // namespace dt::ops::cuda
