#include "ops/cuda/batch_norm.h"

#include <climits>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "ops/cuda/device_buffer.h"
#include "ops/cuda/layer_kernels.h"

namespace dt::ops::cuda {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("BatchNorm: " + what);
}

void require_ptrs(std::initializer_list<std::pair<const void*, const char*>> ptrs) {
  for (const auto& [ptr, name] : ptrs) require(ptr != nullptr, std::string(name) + " is null");
}

}  // namespace

BatchNorm::BatchNorm(std::shared_ptr<core::Context> ctx, const BatchNormParams& params, core::DType dtype)
    : ctx_(std::move(ctx)), p_(params), dtype_(dtype) {
  require(p_.N > 0 && p_.C > 0 && p_.H > 0 && p_.W > 0, "N, C, H, W must be positive");
  require(std::isfinite(p_.eps) && p_.eps > 0.0f, "eps must be positive");
  require(p_.momentum >= 0.0f && p_.momentum <= 1.0f, "momentum must be in [0, 1]");
  require(p_.C <= INT_MAX, "C must fit the grid's int");
  require(p_.H * p_.W <= INT_MAX, "H x W must fit 31 bits");
  core::cuda::gpu_context_of(*ctx_);
}

void BatchNorm::forward_training(const void* x, const float* gamma, const float* beta, void* y,
                                 float* saved_mean, float* saved_var, float* running_mean, float* running_var) {
  require_ptrs({{x, "x"}, {gamma, "gamma"}, {beta, "beta"}, {y, "y"}, {saved_mean, "saved_mean"},
                {saved_var, "saved_var"}, {running_mean, "running_mean"}, {running_var, "running_var"}});
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  const int64_t inner = p_.H * p_.W, count = p_.N * inner;
  // As the CPU kernel: the running variance takes the unbiased estimate.
  const float unbias = count > 1 ? static_cast<float>(count) / static_cast<float>(count - 1) : 1.0f;
  // Freed when this returns: the caching allocator hands it out again only
  // to work queued after these kernels on the same stream.
  const DeviceBuffer scratch(ctx_, kernels::batch_norm_scratch(p_.N, p_.C, inner) * sizeof(float));
  kernels::batch_norm_statistics(gpu.stream(), dtype_, x, p_.N, p_.C, inner, p_.momentum, unbias, saved_mean, saved_var,
                                 running_mean, running_var, static_cast<float*>(scratch.get()), p_.layout);
  kernels::batch_norm_apply(gpu.stream(), dtype_, x, gamma, beta, saved_mean, saved_var, p_.eps, p_.N, p_.C, inner, y,
                            p_.layout);
}

void BatchNorm::forward_inference(const void* x, const float* gamma, const float* beta, const float* running_mean,
                                  const float* running_var, void* y) {
  require_ptrs({{x, "x"}, {gamma, "gamma"}, {beta, "beta"}, {running_mean, "running_mean"},
                {running_var, "running_var"}, {y, "y"}});
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::batch_norm_apply(gpu.stream(), dtype_, x, gamma, beta, running_mean, running_var, p_.eps, p_.N, p_.C,
                            p_.H * p_.W, y, p_.layout);
}

void BatchNorm::backward(const void* x, const void* dy, const float* gamma, const float* saved_mean,
                         const float* saved_var, void* dx, float* dgamma, float* dbeta) {
  require_ptrs({{x, "x"}, {dy, "dy"}, {gamma, "gamma"}, {saved_mean, "saved_mean"}, {saved_var, "saved_var"},
                {dx, "dx"}, {dgamma, "dgamma"}, {dbeta, "dbeta"}});
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  const DeviceBuffer scratch(ctx_, kernels::batch_norm_scratch(p_.N, p_.C, p_.H * p_.W) * sizeof(float));
  kernels::batch_norm_backward(gpu.stream(), dtype_, x, dy, gamma, saved_mean, saved_var, p_.eps, p_.N, p_.C, p_.H * p_.W,
                               dx, dgamma, dbeta, static_cast<float*>(scratch.get()), p_.layout);
}

}  // namespace dt::ops::cuda
