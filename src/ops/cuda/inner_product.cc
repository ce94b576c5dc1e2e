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

}  // namespace

InnerProduct::InnerProduct(std::shared_ptr<core::Context> ctx, const cpu::InnerProductParams& params)
    : ctx_(std::move(ctx)), p_(params) {
  require(p_.N > 0 && p_.in > 0 && p_.out > 0, "N, in and out must be positive");
  require(p_.N <= INT_MAX && p_.in <= INT_MAX && p_.out <= INT_MAX, "N, in and out must fit cuBLAS's int");
  core::cuda::gpu_context_of(*ctx_);  // a GPU context, or Error(kInternal) now rather than at the first call
}

// cuBLAS is column-major; a row-major (r, c) matrix is its (c, r) transpose
// with leading dimension c. So y (N, out) = x (N, in) W^T becomes
// y^T (out, N) = W (out, in) x^T, i.e. op(W_cm) = T, op(x_cm) = N, and so on
// for the two gradients below.
void InnerProduct::forward(const float* x, const float* w, const float* b, float* y) {
  require_ptr(x, "x");
  require_ptr(w, "w");
  require_ptr(y, "y");
  if (p_.has_bias) require_ptr(b, "b");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  const float one = 1.0f, zero = 0.0f;
  DT_CUBLAS_CHECK(cublasSgemm(gpu.cublas().get(), CUBLAS_OP_T, CUBLAS_OP_N, as_int(p_.out), as_int(p_.N),
                              as_int(p_.in), &one, w, as_int(p_.in), x, as_int(p_.in), &zero, y, as_int(p_.out)));
  if (p_.has_bias) kernels::add_channel_bias(gpu.stream(), y, b, p_.N, p_.out, 1);
}

// dx (N, in) = dy (N, out) W (out, in): dx^T (in, N) = W_cm (in, out) dy^T (out, N).
void InnerProduct::backward_data(const float* dy, const float* w, float* dx) {
  require_ptr(dy, "dy");
  require_ptr(w, "w");
  require_ptr(dx, "dx");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  const float one = 1.0f, zero = 0.0f;
  DT_CUBLAS_CHECK(cublasSgemm(gpu.cublas().get(), CUBLAS_OP_N, CUBLAS_OP_N, as_int(p_.in), as_int(p_.N),
                              as_int(p_.out), &one, w, as_int(p_.in), dy, as_int(p_.out), &zero, dx,
                              as_int(p_.in)));
}

// dW (out, in) = dy^T (out, N) x (N, in): dW^T (in, out) = x^T (in, N) dy (N, out).
void InnerProduct::backward_weights(const float* x, const float* dy, float* dw, float* db) {
  require_ptr(x, "x");
  require_ptr(dy, "dy");
  require_ptr(dw, "dw");
  if (p_.has_bias) require_ptr(db, "db");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  const float one = 1.0f, zero = 0.0f;
  DT_CUBLAS_CHECK(cublasSgemm(gpu.cublas().get(), CUBLAS_OP_N, CUBLAS_OP_T, as_int(p_.in), as_int(p_.out),
                              as_int(p_.N), &one, x, as_int(p_.in), dy, as_int(p_.out), &zero, dw, as_int(p_.in)));
  if (p_.has_bias) kernels::sum_per_channel(gpu.stream(), dy, db, p_.N, p_.out, 1);
}

}  // namespace dt::ops::cuda
