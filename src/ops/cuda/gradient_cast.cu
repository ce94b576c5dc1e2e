#include "ops/cuda/gradient_cast.h"

#include <cuda_runtime.h>

#include "core/cuda/grid_launch.cuh"
#include "ops/cuda/element_access.cuh"

namespace dt::ops::cuda {

namespace {

using core::cuda::first_index;
using core::cuda::grid_stride;
using core::cuda::launch_grid;

template <typename T>
__global__ void cast_gradient_kernel(const T* src, float* dst, size_t count, float scale, bool accumulate) {
  for (size_t i = first_index(); i < count; i += grid_stride()) {
    // Rounded on its own, not fused into an FMA with the sum, so that a
    // write gives exactly float(src) * scale.
    const float g = __fmul_rn(load_float(src, static_cast<int64_t>(i)), scale);
    dst[i] = accumulate ? dst[i] + g : g;
  }
}

__global__ void flag_nonfinite_kernel(const float* data, size_t count, unsigned int* flag) {
  bool bad = false;
  for (size_t i = first_index(); i < count && !bad; i += grid_stride()) bad = !isfinite(data[i]);
  // Every writer stores the same value: no atomics needed.
  if (bad) *flag = 1u;
}

}  // namespace

void cast_gradient(const core::Context& ctx, core::DType src_dtype, const void* src, float* dst, size_t count,
                   float scale, bool accumulate) {
  dispatch_activation_dtype(src_dtype, "cast_gradient", [&](auto tag) {
    using T = decltype(tag);
    launch_grid(ctx, "gradient cast kernel launch", count, cast_gradient_kernel<T>, static_cast<const T*>(src), dst,
                count, scale, accumulate);
  });
}

void flag_nonfinite(const core::Context& ctx, const float* data, size_t count, unsigned int* flag) {
  launch_grid(ctx, "non-finite check kernel launch", count, flag_nonfinite_kernel, data, count, flag);
}

}  // namespace dt::ops::cuda
