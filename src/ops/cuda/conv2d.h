// The GPU counterpart of ops::cpu::Conv2D, on cuDNN: the same parameters and
// calls, with device pointers of the context's GPU. Algorithms are chosen
// when the object for a shape is built (layers keep one object per input
// shape), once per distinct problem on the context: timed by a search or
// ranked by cuDNN's heuristics, as MXNET_CUDNN_AUTOTUNE_DEFAULT says
// (ops/cuda/conv_algorithm_search.h). Building also grows the context's
// shared workspace to what the algorithms need, so the calls allocate
// nothing. Calls queue their work on the context's stream and return.
// In float32 the results are float32 throughout (no TF32), comparable with
// the CPU kernel. In float16 or bfloat16 (mixed precision) x, w, y and their
// gradients are of that dtype, cuDNN accumulates in float32 and may use
// tensor cores; the bias and its gradient stay float32.
#pragma once

#include <memory>

#include "core/context.h"
#include "core/dtype.h"
#include "ops/conv2d.h"

namespace dt::ops::cuda {

class Conv2D final : public ops::Conv2D {
 public:
  // Validates as the CPU kernel does (std::invalid_argument); dtype is that
  // of x, w, y and their gradients: float32, float16 or bfloat16.
  Conv2D(std::shared_ptr<core::Context> ctx, const Conv2DParams& params,
         core::DType dtype = core::DType::kFloat32);
  ~Conv2D() override;
  Conv2D(Conv2D&&) noexcept;
  Conv2D& operator=(Conv2D&&) noexcept;

  const Conv2DParams& params() const;
  core::DType dtype() const;

  void forward(const void* x, const void* w, const float* b, void* y) override;
  void backward_data(const void* dy, const void* w, void* dx) override;
  void backward_weights(const void* x, const void* dy, void* dw, float* db) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cuda
