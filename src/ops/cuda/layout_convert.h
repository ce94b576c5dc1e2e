// The CUDA kernel behind ops/layout_convert.h: the gather of the CPU kernel
// (ops/cpu/layout_convert.h), through the same layout_source_offset, one
// thread per destination element. Queued on the context's stream.
#pragma once

#include <cstddef>

#include "core/context.h"
#include "ops/tensor_layout.h"

namespace dt::ops::cuda {

void convert_layout(const core::Context& ctx, void* dst, TensorLayout to, const void* src, TensorLayout from,
                    const LogicalDims& dims, size_t element_size);

}  // namespace dt::ops::cuda
