// CPU kernels behind ops/tensor_math.h. Arguments are already checked: equal
// element counts, a floating dtype where arithmetic is asked for.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace dt::ops::cpu {

// Writes the element_size-byte little-endian pattern `bits` count times.
void fill_pattern(void* dst, size_t count, uint64_t bits, size_t element_size);
void add(core::DType dtype, void* out, const void* a, const void* b, size_t count);
void scale(core::DType dtype, void* arr, double alpha, size_t count);
void axpy(core::DType dtype, void* y, double alpha, const void* x, size_t count);
void cast(core::DType dst_dtype, void* dst, core::DType src_dtype, const void* src, size_t count);

}  // namespace dt::ops::cpu
