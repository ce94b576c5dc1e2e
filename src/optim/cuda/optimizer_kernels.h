// CUDA kernels for the optimizers' update rules (sgd.h, adam.h) on float32
// weights of a GPU context: one kernel launch per parameter, queued on the
// context's stream, returning without waiting. The arithmetic is that of the
// CPU loops, operation for operation, with every multiply and add rounded on
// its own (no fused multiply-add, which the CPU build does not use either),
// so that a GPU update reproduces the CPU one.
#pragma once

#include <cstddef>

#include "core/context.h"
#include "optim/update_scalars.h"

namespace dt::optim::cuda {

// weight, grad and mom (unused, may be null, for kPlain) hold count floats on
// ctx's GPU.
void sgd_update(const core::Context& ctx, SgdRule rule, const SgdScalars<float>& s, float* weight,
                const float* grad, float* mom, size_t count);

// decoupled: AdamW's weight decay outside the adaptive step; otherwise
// Adam's L2 term in the gradient.
void adam_update(const core::Context& ctx, bool decoupled, const AdamScalars<float>& s, float* weight,
                 const float* grad, float* mean, float* var, size_t count);

}  // namespace dt::optim::cuda
