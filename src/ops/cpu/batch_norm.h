#pragma once

#include <cstdint>
#include <memory>

#include "ops/batch_norm.h"
#include "ops/cpu/cpu_engine.h"

namespace dt::ops::cpu {

// ops::BatchNorm on oneDNN, float32 throughout. A moved-from object may
// only be destroyed or assigned to.
class BatchNorm final : public ops::BatchNorm {
 public:
  BatchNorm(const CpuEngine& engine, const BatchNormParams& params);
  ~BatchNorm() override;
  BatchNorm(BatchNorm&&) noexcept;
  BatchNorm& operator=(BatchNorm&&) noexcept;

  const BatchNormParams& params() const;

  void forward_training(const void* x, const float* gamma, const float* beta, void* y, float* saved_mean,
                        float* saved_var, float* running_mean, float* running_var) override;
  void forward_inference(const void* x, const float* gamma, const float* beta, const float* running_mean,
                         const float* running_var, void* y) override;
  void backward(const void* x, const void* dy, const float* gamma, const float* saved_mean,
                const float* saved_var, void* dx, float* dgamma, float* dbeta) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cpu
