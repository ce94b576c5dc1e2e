// Element-wise activations' op. One interface over the CPU kernel
// (ops/cpu/eltwise.h, oneDNN) and the GPU one (ops/cuda/eltwise.h);
// make_eltwise picks by target.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/target.h"

namespace dt::ops {

enum class Activation { kRelu, kSigmoid, kTanh };

// An activation over `count` contiguous elements of the target's dtype on
// its device. backward() takes the forward output y rather than x: all three
// derivatives are cheap in y (relu: y > 0, sigmoid: y(1-y), tanh: 1-y^2),
// and it lets forward run in place (x == y). dx may alias dy. Outputs are
// overwritten. Not thread-safe.
class Eltwise {
 public:
  virtual ~Eltwise() = default;
  virtual void forward(const void* x, void* y) = 0;
  virtual void backward(const void* y, const void* dy, void* dx) = 0;
};

std::unique_ptr<Eltwise> make_eltwise(const Target& target, Activation kind, int64_t count);

}  // namespace dt::ops
