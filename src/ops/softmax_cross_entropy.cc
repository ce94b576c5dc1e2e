#include "ops/softmax_cross_entropy.h"

#include "ops/cpu/softmax_cross_entropy.h"
#if DT_WITH_CUDA
#include "ops/cuda/softmax_cross_entropy.h"
#endif

namespace dt::ops {

std::unique_ptr<SoftmaxCrossEntropy> make_softmax_cross_entropy(const Target& target, int64_t N, int64_t classes,
                                                                Reduction reduction) {
  if (!target.on_gpu()) return std::make_unique<cpu::SoftmaxCrossEntropy>(N, classes, reduction);
#if DT_WITH_CUDA
  return std::make_unique<cuda::SoftmaxCrossEntropy>(target.context, N, classes, reduction);
#else
  detail::throw_no_cuda("SoftmaxCrossEntropy");
#endif
}

}  // namespace dt::ops
