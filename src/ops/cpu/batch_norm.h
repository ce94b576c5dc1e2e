#pragma once

#include <cstdint>
#include <memory>

#include "ops/cpu/cpu_engine.h"

namespace dt::ops::cpu {

// Batch normalisation over NCHW with per-channel statistics; H = W = 1 gives
// BatchNorm1d over (N, C).
//
// momentum follows PyTorch: running = (1 - momentum) * running + momentum *
// batch statistic (MXNet's momentum m corresponds to 1 - m here). As in
// PyTorch the running variance takes the unbiased batch variance, while
// normalisation and saved_var use the biased one.
struct BatchNormParams {
  int64_t N = 0, C = 0, H = 1, W = 1;
  float eps = 1e-5f;
  float momentum = 0.1f;
};

// Per-channel arrays (gamma, beta, means, variances and their gradients) hold
// C floats. Outputs are overwritten. Not thread-safe. A moved-from object
// may only be destroyed or assigned to.
class BatchNorm {
 public:
  BatchNorm(const CpuEngine& engine, const BatchNormParams& params);
  ~BatchNorm();
  BatchNorm(BatchNorm&&) noexcept;
  BatchNorm& operator=(BatchNorm&&) noexcept;

  const BatchNormParams& params() const;

  // Normalises with the batch statistics, writes them to saved_mean and
  // saved_var (biased) for backward(), and folds them into running_mean and
  // running_var in place.
  void forward_training(const float* x, const float* gamma, const float* beta, float* y,
                        float* saved_mean, float* saved_var, float* running_mean,
                        float* running_var);
  void forward_inference(const float* x, const float* gamma, const float* beta,
                         const float* running_mean, const float* running_var, float* y);
  void backward(const float* x, const float* dy, const float* gamma, const float* saved_mean,
                const float* saved_var, float* dx, float* dgamma, float* dbeta);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cpu
