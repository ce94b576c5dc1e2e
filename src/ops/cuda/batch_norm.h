// The GPU counterpart of ops::cpu::BatchNorm: the same parameters, calls and
// conventions (PyTorch's momentum, biased saved_var, unbiased running_var),
// with device pointers of the context's GPU, on own kernels
// (ops/cuda/layer_kernels.h). Own kernels because cuDNN's batch norm saves
// 1/sqrt(var + eps) instead of the variance the CPU interface hands between
// forward and backward, and its legacy entry points are deprecated in
// cuDNN 9. Calls queue their work on the context's stream and return.
// x, y and their gradients are of the kernel's dtype (float32, or float16 /
// bfloat16 in mixed precision); gamma, beta, the statistics and their
// gradients are float32 always, and the arithmetic is float32.
#pragma once

#include <memory>

#include "core/context.h"
#include "core/dtype.h"
#include "ops/batch_norm.h"

namespace dt::ops::cuda {

class BatchNorm final : public ops::BatchNorm {
 public:
  // Validates as the CPU kernel does (std::invalid_argument).
  BatchNorm(std::shared_ptr<core::Context> ctx, const BatchNormParams& params,
            core::DType dtype = core::DType::kFloat32);

  const BatchNormParams& params() const { return p_; }
  core::DType dtype() const { return dtype_; }

  void forward_training(const void* x, const float* gamma, const float* beta, void* y, float* saved_mean,
                        float* saved_var, float* running_mean, float* running_var) override;
  void forward_inference(const void* x, const float* gamma, const float* beta, const float* running_mean,
                         const float* running_var, void* y) override;
  void backward(const void* x, const void* dy, const float* gamma, const float* saved_mean,
                const float* saved_var, void* dx, float* dgamma, float* dbeta) override;

 private:
  std::shared_ptr<core::Context> ctx_;
  BatchNormParams p_;
  core::DType dtype_;
};

}  // namespace dt::ops::cuda
