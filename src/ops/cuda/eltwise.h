// The GPU counterpart of ops::cpu::Eltwise: the same activations and calls,
// with device pointers of the context's GPU, on own kernels
// (ops/cuda/layer_kernels.h). Own kernels because the CPU interface derives
// the gradient from the output alone (so forward may run in place), while
// cuDNN's activation backward is documented to need the input too. Calls
// queue their work on the context's stream and return. Arrays are of the
// kernel's dtype: float32, or float16 / bfloat16 in mixed precision
// (computed in float32).
#pragma once

#include <cstdint>
#include <memory>

#include "core/context.h"
#include "core/dtype.h"
#include "ops/eltwise.h"

namespace dt::ops::cuda {

class Eltwise final : public ops::Eltwise {
 public:
  // count must be positive (std::invalid_argument).
  Eltwise(std::shared_ptr<core::Context> ctx, Activation kind, int64_t count,
          core::DType dtype = core::DType::kFloat32);

  Activation kind() const { return kind_; }
  int64_t count() const { return count_; }
  core::DType dtype() const { return dtype_; }

  void forward(const void* x, void* y) override;
  void backward(const void* y, const void* dy, void* dx) override;

 private:
  std::shared_ptr<core::Context> ctx_;
  Activation kind_;
  int64_t count_;
  core::DType dtype_;
};

}  // namespace dt::ops::cuda
