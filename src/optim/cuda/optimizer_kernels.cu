#include "optim/cuda/optimizer_kernels.h"

#include <cuda_runtime.h>

#include "core/cuda/grid_launch.cuh"

namespace dt::optim::cuda {

using core::cuda::first_index;
using core::cuda::grid_stride;

namespace {

// The CPU loops' expressions with each operation rounded on its own:
// nvcc would otherwise contract a * b + c into one fused multiply-add, whose
// single rounding the CPU build (no -mfma) never performs.
__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float sub(float a, float b) { return __fsub_rn(a, b); }

// std::min(std::max(v, -clip), clip), comparison for comparison, so that a
// NaN gradient stays NaN as on the CPU (fminf/fmaxf would drop it).
__device__ inline float clipped(float v, float clip) {
  const float low = v < -clip ? -clip : v;
  return clip < low ? clip : low;
}

template <SgdRule kRule>
__global__ void sgd_kernel(SgdScalars<float> s, float* weight, const float* grad, float* mom, size_t count) {
  for (size_t i = first_index(); i < count; i += grid_stride()) {
    const float w = weight[i];
    const float g = add(clipped(mul(s.rescale, grad[i]), s.clip), mul(s.wd, w));
    if constexpr (kRule == SgdRule::kPlain) {
      weight[i] = sub(w, mul(s.lr, g));
    } else if constexpr (kRule == SgdRule::kMomentum) {
      const float m = sub(mul(s.momentum, mom[i]), mul(s.lr, g));
      mom[i] = m;
      weight[i] = add(w, m);
    } else {
      const float m = add(mul(s.momentum, mom[i]), g);
      mom[i] = m;
      weight[i] = sub(w, mul(s.lr, add(g, mul(s.momentum, m))));
    }
  }
}

template <bool kDecoupled>
__global__ void adam_kernel(AdamScalars<float> s, float* weight, const float* grad, float* mean, float* var,
                            size_t count) {
  for (size_t i = first_index(); i < count; i += grid_stride()) {
    const float w = weight[i];
    float g = clipped(mul(s.rescale, grad[i]), s.clip);
    if constexpr (!kDecoupled) g = add(g, mul(s.wd, w));
    const float m = add(mul(s.beta1, mean[i]), mul(s.one_minus_beta1, g));
    const float v = add(mul(s.beta2, var[i]), mul(mul(s.one_minus_beta2, g), g));
    mean[i] = m;
    var[i] = v;
    const float adaptive = __fdiv_rn(mul(s.lr_t, m), add(__fsqrt_rn(v), s.epsilon));
    if constexpr (kDecoupled) {
      weight[i] = sub(mul(w, s.decay), adaptive);
    } else {
      weight[i] = sub(w, adaptive);
    }
  }
}

}  // namespace

void sgd_update(const core::Context& ctx, SgdRule rule, const SgdScalars<float>& s, float* weight,
                const float* grad, float* mom, size_t count) {
  switch (rule) {
    case SgdRule::kPlain:
      core::cuda::launch_grid(ctx, "sgd kernel launch", count, sgd_kernel<SgdRule::kPlain>, s, weight, grad, mom,
                              count);
      return;
    case SgdRule::kMomentum:
      core::cuda::launch_grid(ctx, "sgd momentum kernel launch", count, sgd_kernel<SgdRule::kMomentum>, s, weight,
                              grad, mom, count);
      return;
    case SgdRule::kNesterov:
      core::cuda::launch_grid(ctx, "sgd nesterov kernel launch", count, sgd_kernel<SgdRule::kNesterov>, s, weight,
                              grad, mom, count);
      return;
  }
}

void adam_update(const core::Context& ctx, bool decoupled, const AdamScalars<float>& s, float* weight,
                 const float* grad, float* mean, float* var, size_t count) {
  if (decoupled) {
    core::cuda::launch_grid(ctx, "adamw kernel launch", count, adam_kernel<true>, s, weight, grad, mean, var, count);
  } else {
    core::cuda::launch_grid(ctx, "adam kernel launch", count, adam_kernel<false>, s, weight, grad, mean, var, count);
  }
}

}  // namespace dt::optim::cuda
