#pragma once

#include <cstdint>
#include <memory>

#include "ops/cpu/cpu_engine.h"

namespace dt::ops::cpu {

enum class Activation { kRelu, kSigmoid, kTanh };

// Element-wise activation over `count` contiguous floats. backward() takes
// the forward output y rather than x: all three derivatives are cheap in y
// (relu: y > 0, sigmoid: y(1-y), tanh: 1-y^2), and it lets forward run in
// place (x == y). dx may alias dy. Outputs are overwritten. Not thread-safe.
// A moved-from object may only be destroyed or assigned to.
class Eltwise {
 public:
  Eltwise(const CpuEngine& engine, Activation kind, int64_t count);
  ~Eltwise();
  Eltwise(Eltwise&&) noexcept;
  Eltwise& operator=(Eltwise&&) noexcept;

  Activation kind() const;
  int64_t count() const;

  void forward(const float* x, float* y);
  void backward(const float* y, const float* dy, float* dx);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cpu
