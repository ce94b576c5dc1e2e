#include "ops/cuda/inner_product.h"

#include <climits>
#include <stdexcept>
#include <string>

#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "core/cuda/library_handles.h"
#include "ops/cuda/layer_kernels.h"

namespace dt::ops::cuda {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("InnerProduct: " + what);
}

void require_ptr(const void* ptr, const char* name) {
  if (ptr == nullptr) throw std::invalid_argument(std::string("InnerProduct: ") + name + " is null");
}

int as_int(int64_t v) { return static_cast<int>(v); }

cudaDataType_t cuda_type(core::DType dtype) {
  switch (dtype) {
    case core::DType::kFloat32: return CUDA_R_32F;
    case core::DType::kFloat16: return CUDA_R_16F;
    case core::DType::kBFloat16: return CUDA_R_16BF;
    default: break;
  }
  throw std::invalid_argument(std::string("InnerProduct: no GEMM for ") + core::dtype_name(dtype) +
                              " (float32, float16 or bfloat16 only)");
}

}  // namespace

InnerProduct::InnerProduct(std::shared_ptr<core::Context> ctx, const InnerProductParams& params,
                           core::DType dtype)
    : ctx_(std::move(ctx)), p_(params), dtype_(dtype) {
  cuda_type(dtype_);
  require(p_.N > 0 && p_.in > 0 && p_.out > 0, "N, in and out must be positive");
  require(p_.N <= INT_MAX && p_.in <= INT_MAX && p_.out <= INT_MAX, "N, in and out must fit cuBLAS's int");
  core::cuda::gpu_context_of(*ctx_);  // a GPU context, or Error(kInternal) now rather than at the first call
}

void InnerProduct::gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const void* a,
                        int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc) {
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const float one = 1.0f, zero = 0.0f;
  if (dtype_ == core::DType::kFloat32) {
    DT_CUBLAS_CHECK(cublasSgemm(gpu.cublas().get(), op_a, op_b, as_int(m), as_int(n), as_int(k), &one,
                                static_cast<const float*>(a), as_int(lda), static_cast<const float*>(b), as_int(ldb),
                                &zero, static_cast<float*>(c), as_int(ldc)));
    return;
  }
  // 16-bit storage, float32 accumulation and scaling factors: what PyTorch's
  // AMP runs for a linear layer.
  const cudaDataType_t type = cuda_type(dtype_);
  DT_CUBLAS_CHECK(cublasGemmEx(gpu.cublas().get(), op_a, op_b, as_int(m), as_int(n), as_int(k), &one, a, type,
                               as_int(lda), b, type, as_int(ldb), &zero, c, type, as_int(ldc), CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
}

// cuBLAS is column-major; a row-major (r, c) matrix is its (c, r) transpose
// with leading dimension c. So y (N, out) = x (N, in) W^T becomes
// y^T (out, N) = W (out, in) x^T, i.e. op(W_cm) = T, op(x_cm) = N, and so on
// for the two gradients below.
void InnerProduct::forward(const void* x, const void* w, const float* b, void* y) {
  require_ptr(x, "x");
  require_ptr(w, "w");
  require_ptr(y, "y");
  if (p_.has_bias) require_ptr(b, "b");
  gemm(true, false, p_.out, p_.N, p_.in, w, p_.in, x, p_.in, y, p_.out);
  if (p_.has_bias) {
    core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
    core::cuda::DeviceGuard guard(gpu.device_id());
    kernels::add_channel_bias(gpu.stream(), dtype_, y, b, p_.N, p_.out, 1);
  }
}

// dx (N, in) = dy (N, out) W (out, in): dx^T (in, N) = W_cm (in, out) dy^T (out, N).
void InnerProduct::backward_data(const void* dy, const void* w, void* dx) {
  require_ptr(dy, "dy");
  require_ptr(w, "w");
  require_ptr(dx, "dx");
  gemm(false, false, p_.in, p_.N, p_.out, w, p_.in, dy, p_.out, dx, p_.in);
}

// dW (out, in) = dy^T (out, N) x (N, in): dW^T (in, out) = x^T (in, N) dy (N, out).
void InnerProduct::backward_weights(const void* x, const void* dy, void* dw, float* db) {
  require_ptr(x, "x");
  require_ptr(dy, "dy");
  require_ptr(dw, "dw");
  if (p_.has_bias) require_ptr(db, "db");
  gemm(false, true, p_.in, p_.out, p_.N, x, p_.in, dy, p_.out, dw, p_.in);
  if (p_.has_bias) {
    core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
    core::cuda::DeviceGuard guard(gpu.device_id());
    kernels::sum_per_channel(gpu.stream(), dtype_, dy, db, p_.N, p_.out, 1);
  }
}

}  // namespace dt::ops::cuda
