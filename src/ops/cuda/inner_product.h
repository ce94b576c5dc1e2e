// The GPU counterpart of ops::cpu::InnerProduct, on cuBLAS: the same
// parameters and calls, with device pointers of the context's GPU. Calls
// queue their work on the context's stream and return. In float32, SGEMM
// throughout (the handle's math mode excludes TF32), comparable with the CPU
// kernel. In float16 or bfloat16 (mixed precision) x, w, y and their
// gradients are of that dtype and cublasGemmEx accumulates in float32
// (tensor cores where cuBLAS picks them); the bias and its gradient stay
// float32.
#pragma once

#include <memory>

#include "core/context.h"
#include "core/dtype.h"
#include "ops/inner_product.h"

namespace dt::ops::cuda {

class InnerProduct final : public ops::InnerProduct {
 public:
  // Validates as the CPU kernel does (std::invalid_argument); dtype is that
  // of x, w, y and their gradients: float32, float16 or bfloat16.
  InnerProduct(std::shared_ptr<core::Context> ctx, const InnerProductParams& params,
               core::DType dtype = core::DType::kFloat32);

  const InnerProductParams& params() const { return p_; }
  core::DType dtype() const { return dtype_; }

  void forward(const void* x, const void* w, const float* b, void* y) override;
  void backward_data(const void* dy, const void* w, void* dx) override;
  void backward_weights(const void* x, const void* dy, void* dw, float* db) override;

 private:
  // C (m x n) = op(A) op(B), column-major, in the kernel's dtype.
  void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
            const void* b, int64_t ldb, void* c, int64_t ldc);

  std::shared_ptr<core::Context> ctx_;
  InnerProductParams p_;
  core::DType dtype_;
};

}  // namespace dt::ops::cuda
