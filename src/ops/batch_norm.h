// Batch normalisation's op over NCHW or NHWC with per-channel statistics; H = W = 1
// gives BatchNorm1d over (N, C). One interface over the CPU kernel
// (ops/cpu/batch_norm.h, oneDNN) and the GPU one (ops/cuda/batch_norm.h);
// make_batch_norm picks by target.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/target.h"
#include "ops/tensor_layout.h"

namespace dt::ops {

// momentum follows PyTorch: running = (1 - momentum) * running + momentum *
// batch statistic (MXNet's momentum m corresponds to 1 - m here). As in
// PyTorch the running variance takes the unbiased batch variance, while
// normalisation and saved_var use the biased one.
struct BatchNormParams {
  int64_t N = 0, C = 0, H = 1, W = 1;
  float eps = 1e-5f;
  float momentum = 0.1f;
  // Of x and y and their gradients, over the logical (N, C, H, W).
  TensorLayout layout = TensorLayout::kNCHW;
};

// x, y and their gradients are of the target's dtype; per-channel arrays
// (gamma, beta, means, variances and their gradients) hold C float32s. All
// on the target's device. Outputs are overwritten. Not thread-safe.
class BatchNorm {
 public:
  virtual ~BatchNorm() = default;

  // Normalises with the batch statistics, writes them to saved_mean and
  // saved_var (biased) for backward(), and folds them into running_mean and
  // running_var in place.
  virtual void forward_training(const void* x, const float* gamma, const float* beta, void* y, float* saved_mean,
                                float* saved_var, float* running_mean, float* running_var) = 0;
  virtual void forward_inference(const void* x, const float* gamma, const float* beta, const float* running_mean,
                                 const float* running_var, void* y) = 0;
  virtual void backward(const void* x, const void* dy, const float* gamma, const float* saved_mean,
                        const float* saved_var, void* dx, float* dgamma, float* dbeta) = 0;
};

std::unique_ptr<BatchNorm> make_batch_norm(const Target& target, const BatchNormParams& params);

}  // namespace dt::ops
