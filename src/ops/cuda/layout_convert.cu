#include "ops/cuda/layout_convert.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/grid_launch.cuh"

namespace dt::ops::cuda {
namespace {

using core::cuda::first_index;
using core::cuda::grid_stride;
using core::cuda::launch_grid;

template <typename T>
__global__ void gather_kernel(T* dst, TensorLayout to, const T* src, TensorLayout from, int64_t C, int64_t H,
                              int64_t W, size_t count) {
  for (size_t i = first_index(); i < count; i += grid_stride()) {
    dst[i] = src[layout_source_offset(static_cast<int64_t>(i), to, from, C, H, W)];
  }
}

template <typename T>
void launch(const core::Context& ctx, void* dst, TensorLayout to, const void* src, TensorLayout from,
            const LogicalDims& d) {
  const size_t count = static_cast<size_t>(d.N * d.C * d.H * d.W);
  launch_grid(ctx, "layout conversion kernel launch", count, gather_kernel<T>, static_cast<T*>(dst), to,
              static_cast<const T*>(src), from, d.C, d.H, d.W, count);
}

}  // namespace

void convert_layout(const core::Context& ctx, void* dst, TensorLayout to, const void* src, TensorLayout from,
                    const LogicalDims& dims, size_t element_size) {
  switch (element_size) {
    case 1:
      return launch<uint8_t>(ctx, dst, to, src, from, dims);
    case 2:
      return launch<uint16_t>(ctx, dst, to, src, from, dims);
    case 4:
      return launch<uint32_t>(ctx, dst, to, src, from, dims);
    case 8:
      return launch<uint64_t>(ctx, dst, to, src, from, dims);
    default:
      throw std::invalid_argument("convert_layout: element size " + std::to_string(element_size) +
                                  " is not 1, 2, 4 or 8");
  }
}

}  // namespace dt::ops::cuda
