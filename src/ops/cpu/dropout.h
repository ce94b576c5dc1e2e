// Inverted dropout on the CPU: the CPU half of ops/dropout.h, plain loops
// over float32 that draw the mask with ops::dropout_keeps, as the GPU kernel
// does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace dt::ops::cpu {

// y[i] = keep(i) ? x[i] * scale : 0 and mask[i] = keep(i), scale = 1 / (1 -
// rate); x and y may be the same array. Error(kNotSupported) unless dtype is
// float32.
void dropout_forward(core::DType dtype, const void* x, void* y, uint8_t* mask, size_t count, uint64_t key,
                     double rate);
// dx[i] = mask[i] ? dy[i] * scale : 0; dx may alias dy.
void dropout_backward(core::DType dtype, const void* dy, void* dx, const uint8_t* mask, size_t count, double rate);

}  // namespace dt::ops::cpu
