#include "ops/batch_norm.h"

#include "ops/cpu/batch_norm.h"
#if DT_WITH_CUDA
#include "ops/cuda/batch_norm.h"
#endif

namespace dt::ops {

std::unique_ptr<BatchNorm> make_batch_norm(const Target& target, const BatchNormParams& params) {
  if (!target.on_gpu()) return std::make_unique<cpu::BatchNorm>(detail::cpu_engine(target), params);
#if DT_WITH_CUDA
  return std::make_unique<cuda::BatchNorm>(target.context, params, target.dtype);
#else
  detail::throw_no_cuda("BatchNorm");
#endif
}

}  // namespace dt::ops
