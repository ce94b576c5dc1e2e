#include "ops/inner_product.h"

#include "ops/cpu/inner_product.h"
#if DT_WITH_CUDA
#include "ops/cuda/inner_product.h"
#endif

namespace dt::ops {

std::unique_ptr<InnerProduct> make_inner_product(const Target& target, const InnerProductParams& params) {
  if (!target.on_gpu()) return std::make_unique<cpu::InnerProduct>(detail::cpu_engine(target), params);
#if DT_WITH_CUDA
  return std::make_unique<cuda::InnerProduct>(target.context, params, target.dtype);
#else
  detail::throw_no_cuda("InnerProduct");
#endif
}

}  // namespace dt::ops
