// Inverted dropout on the device of a context: the CPU loop
// (ops/cpu/dropout.h) or the GPU kernel (ops/cuda/dropout.h). Both draw the
// mask with ops::dropout_keeps (ops/dropout_mask.h), so both devices keep
// the same elements for the same key.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/context.h"
#include "core/dtype.h"

namespace dt::ops {

// y[i] = keep(i) ? x[i] * scale : 0 and mask[i] = keep(i), scale = 1 / (1 -
// rate), over count elements of dtype (float32 on the CPU; float32, float16
// or bfloat16 on a GPU) on ctx's device. x and y may be the same array.
// Error(kNotSupported) for another dtype. On a GPU the work is queued on the
// context's stream.
void dropout_forward(const core::Context& ctx, core::DType dtype, const void* x, void* y, uint8_t* mask,
                     size_t count, uint64_t key, double rate);
// dx[i] = mask[i] ? dy[i] * scale : 0; dx may alias dy.
void dropout_backward(const core::Context& ctx, core::DType dtype, const void* dy, void* dx, const uint8_t* mask,
                      size_t count, double rate);

}  // namespace dt::ops
