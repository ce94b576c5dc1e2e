// The GPU counterpart of ops::cpu::InnerProduct, on cuBLAS SGEMM: the same
// parameters and calls, with device pointers of the context's GPU. Calls
// queue their work on the context's stream and return. float32 throughout
// (the handle's math mode excludes TF32), comparable with the CPU kernel.
#pragma once

#include <memory>

#include "core/context.h"
#include "ops/cpu/inner_product.h"

namespace dt::ops::cuda {

class InnerProduct {
 public:
  // Validates as the CPU kernel does (std::invalid_argument).
  InnerProduct(std::shared_ptr<core::Context> ctx, const cpu::InnerProductParams& params);

  const cpu::InnerProductParams& params() const { return p_; }

  void forward(const float* x, const float* w, const float* b, float* y);
  void backward_data(const float* dy, const float* w, float* dx);
  void backward_weights(const float* x, const float* dy, float* dw, float* db);

 private:
  std::shared_ptr<core::Context> ctx_;
  cpu::InnerProductParams p_;
};

}  // namespace dt::ops::cuda
