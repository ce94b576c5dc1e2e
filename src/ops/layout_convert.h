// Conversion of 4-d activations between NCHW and NHWC (ops/tensor_layout.h),
// on the CPU or a GPU, for any element size: a 16-bit float is moved as its
// bits, so float32, float16 and bfloat16 arrays convert alike. A net that
// runs its 4-d layers in NHWC converts once at its input and once before its
// first layer that is not 4-d.
#pragma once

#include <cstddef>

#include "core/context.h"
#include "core/ndarray.h"
#include "ops/tensor_layout.h"

namespace dt::ops {

// dst = src in layout `to`; src holds its logical dims in layout `from`.
// Both arrays on the same device, of one dtype, 4-d, with dst's shape
// layout_shape(to, dims of src) (Error(kInvalidArgument) /
// Error(kDtypeMismatch) / Error(kShapeMismatch) otherwise). from == to is a
// copy. On a GPU the copy is queued on the context's stream. dst and src must
// not overlap.
void convert_layout(const core::NDArray& dst, TensorLayout to, const core::NDArray& src, TensorLayout from);

// The same on plain device pointers whose arguments are already checked.
void convert_layout(const core::Context& ctx, void* dst, TensorLayout to, const void* src, TensorLayout from,
                    const LogicalDims& dims, size_t element_size);

}  // namespace dt::ops
