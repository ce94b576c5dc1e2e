#include "ops/pooling.h"

#include "ops/cpu/pooling.h"
#if DT_WITH_CUDA
#include "ops/cuda/pooling.h"
#endif

namespace dt::ops {

int64_t Pool2DParams::out_h() const { return (H + 2 * pad_h - kernel_h) / stride_h + 1; }
int64_t Pool2DParams::out_w() const { return (W + 2 * pad_w - kernel_w) / stride_w + 1; }

std::unique_ptr<MaxPool2D> make_max_pool2d(const Target& target, const Pool2DParams& params) {
  if (!target.on_gpu()) return std::make_unique<cpu::MaxPool2D>(detail::cpu_engine(target), params);
#if DT_WITH_CUDA
  return std::make_unique<cuda::MaxPool2D>(target.context, params, target.dtype);
#else
  detail::throw_no_cuda("MaxPool2D");
#endif
}

std::unique_ptr<AvgPool2D> make_avg_pool2d(const Target& target, const Pool2DParams& params,
                                           bool count_include_pad) {
  if (!target.on_gpu()) {
    return std::make_unique<cpu::AvgPool2D>(detail::cpu_engine(target), params, count_include_pad);
  }
#if DT_WITH_CUDA
  return std::make_unique<cuda::AvgPool2D>(target.context, params, count_include_pad, target.dtype);
#else
  detail::throw_no_cuda("AvgPool2D");
#endif
}

std::unique_ptr<GlobalAvgPool2D> make_global_avg_pool2d(const Target& target, int64_t N, int64_t C, int64_t H,
                                                        int64_t W, TensorLayout layout) {
  if (!target.on_gpu()) {
    return std::make_unique<cpu::GlobalAvgPool2D>(detail::cpu_engine(target), N, C, H, W, layout);
  }
#if DT_WITH_CUDA
  return std::make_unique<cuda::GlobalAvgPool2D>(target.context, N, C, H, W, target.dtype, layout);
#else
  detail::throw_no_cuda("GlobalAvgPool2D");
#endif
}

}  // namespace dt::ops
