// Inverted dropout on a GPU context: the GPU half of DropoutLayer. The mask
// is drawn by ops::dropout_keeps (ops/dropout_mask.h), the function the CPU
// loop calls, so both devices keep the same elements for the same key.
// Element type: float32, float16 or bfloat16 (a mixed-precision net's
// activations), computed in float32. Calls queue their work on the
// context's stream and return at once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/context.h"
#include "core/dtype.h"

namespace dt::ops::cuda {

// y[i] = keep(i) ? x[i] * scale : 0 and mask[i] = keep(i), scale = 1 / (1 -
// rate). x and y may be the same array. Error(kNotSupported) for another dtype.
void dropout_forward(const core::Context& ctx, core::DType dtype, const void* x, void* y, uint8_t* mask,
                     size_t count, uint64_t key, double rate);
// dx[i] = mask[i] ? dy[i] * scale : 0; dx may alias dy.
void dropout_backward(const core::Context& ctx, core::DType dtype, const void* dy, void* dx, const uint8_t* mask,
                      size_t count, double rate);

}  // namespace dt::ops::cuda
