#include "ops/dropout.h"

#include "ops/cpu/dropout.h"
#include "ops/target.h"
#if DT_WITH_CUDA
#include "ops/cuda/dropout.h"
#endif

namespace dt::ops {

void dropout_forward(const core::Context& ctx, core::DType dtype, const void* x, void* y, uint8_t* mask,
                     size_t count, uint64_t key, double rate) {
  if (ctx.is_cpu()) {
    cpu::dropout_forward(dtype, x, y, mask, count, key, rate);
    return;
  }
#if DT_WITH_CUDA
  cuda::dropout_forward(ctx, dtype, x, y, mask, count, key, rate);
#else
  detail::throw_no_cuda("dropout");
#endif
}

void dropout_backward(const core::Context& ctx, core::DType dtype, const void* dy, void* dx, const uint8_t* mask,
                      size_t count, double rate) {
  if (ctx.is_cpu()) {
    cpu::dropout_backward(dtype, dy, dx, mask, count, rate);
    return;
  }
#if DT_WITH_CUDA
  cuda::dropout_backward(ctx, dtype, dy, dx, mask, count, rate);
#else
  detail::throw_no_cuda("dropout");
#endif
}

}  // namespace dt::ops
