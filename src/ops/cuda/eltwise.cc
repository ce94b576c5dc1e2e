#include "ops/cuda/eltwise.h"

#include <stdexcept>
#include <string>

#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "ops/cuda/layer_kernels.h"

namespace dt::ops::cuda {

namespace {

kernels::ActivationKind kernel_kind(Activation kind) {
  switch (kind) {
    case Activation::kRelu: return kernels::ActivationKind::kRelu;
    case Activation::kSigmoid: return kernels::ActivationKind::kSigmoid;
    case Activation::kTanh: return kernels::ActivationKind::kTanh;
  }
  throw std::invalid_argument("Eltwise: unknown activation kind");
}

void require_ptr(const void* ptr, const char* name) {
  if (ptr == nullptr) throw std::invalid_argument(std::string("Eltwise: ") + name + " is null");
}

}  // namespace

Eltwise::Eltwise(std::shared_ptr<core::Context> ctx, Activation kind, int64_t count, core::DType dtype)
    : ctx_(std::move(ctx)), kind_(kind), count_(count), dtype_(dtype) {
  if (count <= 0) throw std::invalid_argument("Eltwise: count must be positive");
  kernel_kind(kind);
  core::cuda::gpu_context_of(*ctx_);
}

void Eltwise::forward(const void* x, void* y) {
  require_ptr(x, "x");
  require_ptr(y, "y");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::activation_forward(gpu.stream(), dtype_, kernel_kind(kind_), x, y, count_);
}

void Eltwise::backward(const void* y, const void* dy, void* dx) {
  require_ptr(y, "y");
  require_ptr(dy, "dy");
  require_ptr(dx, "dx");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::activation_backward(gpu.stream(), dtype_, kernel_kind(kind_), y, dy, dx, count_);
}

}  // namespace dt::ops::cuda
