// The CPU kernel behind ops/layout_convert.h: a gather through
// layout_source_offset, the index function the CUDA kernel uses.
#pragma once

#include <cstddef>

#include "ops/tensor_layout.h"

namespace dt::ops::cpu {

// element_size 1, 2, 4 or 8 (std::invalid_argument otherwise).
void convert_layout(void* dst, TensorLayout to, const void* src, TensorLayout from, const LogicalDims& dims,
                    size_t element_size);

}  // namespace dt::ops::cpu
