// The GPU counterpart of ops::cpu::Conv2D, on cuDNN: the same parameters and
// calls, with device pointers of the context's GPU. Algorithms are chosen
// once, when the object for a shape is built (layers keep one object per
// input shape), and each call takes its workspace from the context's caching
// allocator. Calls queue their work on the context's stream and return.
// Results are float32 throughout (no TF32), comparable with the CPU kernel.
#pragma once

#include <memory>

#include "core/context.h"
#include "ops/cpu/conv2d.h"

namespace dt::ops::cuda {

class Conv2D {
 public:
  // Validates as the CPU kernel does (std::invalid_argument).
  Conv2D(std::shared_ptr<core::Context> ctx, const cpu::Conv2DParams& params);
  ~Conv2D();
  Conv2D(Conv2D&&) noexcept;
  Conv2D& operator=(Conv2D&&) noexcept;

  const cpu::Conv2DParams& params() const;

  void forward(const float* x, const float* w, const float* b, float* y);
  void backward_data(const float* dy, const float* w, float* dx);
  void backward_weights(const float* x, const float* dy, float* dw, float* db);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cuda
