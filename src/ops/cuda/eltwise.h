// The GPU counterpart of ops::cpu::Eltwise: the same activations and calls,
// with device pointers of the context's GPU, on own kernels
// (ops/cuda/layer_kernels.h). Own kernels because the CPU interface derives
// the gradient from the output alone (so forward may run in place), while
// cuDNN's activation backward is documented to need the input too. Calls
// queue their work on the context's stream and return.
#pragma once

#include <cstdint>
#include <memory>

#include "core/context.h"
#include "ops/cpu/eltwise.h"

namespace dt::ops::cuda {

class Eltwise {
 public:
  // count must be positive (std::invalid_argument).
  Eltwise(std::shared_ptr<core::Context> ctx, cpu::Activation kind, int64_t count);

  cpu::Activation kind() const { return kind_; }
  int64_t count() const { return count_; }

  void forward(const float* x, float* y);
  void backward(const float* y, const float* dy, float* dx);

 private:
  std::shared_ptr<core::Context> ctx_;
  cpu::Activation kind_;
  int64_t count_;
};

}  // namespace dt::ops::cuda
