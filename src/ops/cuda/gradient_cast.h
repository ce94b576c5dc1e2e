// The gradient side of mixed precision on a GPU: casting the parameter
// gradients a net computed in float16 / bfloat16 (scaled by the loss scale)
// into the float32 gradient arrays that optimizers and kvstores see, taking
// the loss scale out on the way; and finding inf/NaN in float32 gradients
// (an overflowed step) with one flag in device memory, so that a step costs
// one read of four bytes however many parameters there are. Calls queue
// their kernels on the context's stream and return.
#pragma once

#include <cstddef>

#include "core/context.h"
#include "core/dtype.h"

namespace dt::ops::cuda {

// dst[i] = (accumulate ? dst[i] : 0) + float(src[i]) * scale for count
// elements; src is float32, float16 or bfloat16 (Error(kNotSupported)
// otherwise). With scale a power of two (1 / loss scale) the product is
// exact unless it leaves float32's normal range, so unscaling loses nothing.
void cast_gradient(const core::Context& ctx, core::DType src_dtype, const void* src, float* dst, size_t count,
                   float scale, bool accumulate);

// Sets *flag (device memory) to 1 if any of data[0..count) is inf or NaN;
// leaves it alone otherwise, so one flag, zeroed once, collects any number
// of arrays.
void flag_nonfinite(const core::Context& ctx, const float* data, size_t count, unsigned int* flag);

}  // namespace dt::ops::cuda
