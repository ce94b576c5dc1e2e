// The GPU counterpart of ops::cpu::BatchNorm: the same parameters, calls and
// conventions (PyTorch's momentum, biased saved_var, unbiased running_var),
// with device pointers of the context's GPU, on own kernels
// (ops/cuda/layer_kernels.h). Own kernels because cuDNN's batch norm saves
// 1/sqrt(var + eps) instead of the variance the CPU interface hands between
// forward and backward, and its legacy entry points are deprecated in
// cuDNN 9. Calls queue their work on the context's stream and return.
#pragma once

#include <memory>

#include "core/context.h"
#include "ops/cpu/batch_norm.h"

namespace dt::ops::cuda {

class BatchNorm {
 public:
  // Validates as the CPU kernel does (std::invalid_argument).
  BatchNorm(std::shared_ptr<core::Context> ctx, const cpu::BatchNormParams& params);

  const cpu::BatchNormParams& params() const { return p_; }

  void forward_training(const float* x, const float* gamma, const float* beta, float* y, float* saved_mean,
                        float* saved_var, float* running_mean, float* running_var);
  void forward_inference(const float* x, const float* gamma, const float* beta, const float* running_mean,
                         const float* running_var, float* y);
  void backward(const float* x, const float* dy, const float* gamma, const float* saved_mean,
                const float* saved_var, float* dx, float* dgamma, float* dbeta);

 private:
  std::shared_ptr<core::Context> ctx_;
  cpu::BatchNormParams p_;
};

}  // namespace dt::ops::cuda
