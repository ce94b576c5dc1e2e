// CUDA kernels behind ops/tensor_math.h, with the CPU kernels' semantics
// (ops/cpu/tensor_math.h): 16-bit floats compute in float and round to
// nearest even; float to integer truncates toward zero and saturates, NaN -> 0.
// Arguments are already checked. Each call queues its kernel on the context's
// stream and returns without waiting; copies to the host wait for it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/context.h"
#include "core/dtype.h"

namespace dt::ops::cuda {

// Writes the element_size-byte little-endian pattern `bits` count times.
void fill_pattern(const core::Context& ctx, void* dst, size_t count, uint64_t bits, size_t element_size);
void add(const core::Context& ctx, core::DType dtype, void* out, const void* a, const void* b, size_t count);
void scale(const core::Context& ctx, core::DType dtype, void* arr, double alpha, size_t count);
void axpy(const core::Context& ctx, core::DType dtype, void* y, double alpha, const void* x, size_t count);
void cast(const core::Context& ctx, core::DType dst_dtype, void* dst, core::DType src_dtype, const void* src,
          size_t count);

}  // namespace dt::ops::cuda
