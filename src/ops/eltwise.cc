#include "ops/eltwise.h"

#include "ops/cpu/eltwise.h"
#if DT_WITH_CUDA
#include "ops/cuda/eltwise.h"
#endif

namespace dt::ops {

std::unique_ptr<Eltwise> make_eltwise(const Target& target, Activation kind, int64_t count) {
  if (!target.on_gpu()) return std::make_unique<cpu::Eltwise>(detail::cpu_engine(target), kind, count);
#if DT_WITH_CUDA
  return std::make_unique<cuda::Eltwise>(target.context, kind, count, target.dtype);
#else
  detail::throw_no_cuda("Eltwise");
#endif
}

}  // namespace dt::ops
