#include "ops/cuda/pooling.h"

#include <climits>
#include <stdexcept>
#include <string>

#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "ops/cuda/layer_kernels.h"

namespace dt::ops::cuda {

namespace {

void require(bool ok, const char* kernel, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(kernel) + ": " + what);
}

void require_ptr(const void* ptr, const char* kernel, const char* name) {
  require(ptr != nullptr, kernel, std::string(name) + " is null");
}

void validate(const Pool2DParams& p, const char* kernel) {
  require(p.N > 0 && p.C > 0 && p.H > 0 && p.W > 0, kernel, "N, C, H, W must be positive");
  require(p.kernel_h > 0 && p.kernel_w > 0, kernel, "kernel must be positive");
  require(p.stride_h > 0 && p.stride_w > 0, kernel, "strides must be positive");
  require(p.pad_h >= 0 && p.pad_w >= 0, kernel, "padding must be non-negative");
  require(2 * p.pad_h <= p.kernel_h && 2 * p.pad_w <= p.kernel_w, kernel, "padding must be at most half the kernel");
  require(p.out_h() > 0 && p.out_w() > 0, kernel, "kernel is larger than the padded input");
  require(p.H * p.W <= INT32_MAX, kernel, "H * W must fit in 32 bits");
}

kernels::PoolShape shape_of(const Pool2DParams& p) {
  kernels::PoolShape s;
  s.planes = p.N * p.C;
  s.H = p.H;
  s.W = p.W;
  s.P = p.out_h();
  s.Q = p.out_w();
  s.kernel_h = p.kernel_h;
  s.kernel_w = p.kernel_w;
  s.stride_h = p.stride_h;
  s.stride_w = p.stride_w;
  s.pad_h = p.pad_h;
  s.pad_w = p.pad_w;
  s.C = p.C;
  s.layout = p.layout;
  return s;
}

const Pool2DParams& checked(const Pool2DParams& p, const char* kernel) {
  validate(p, kernel);
  return p;
}

}  // namespace

MaxPool2D::MaxPool2D(std::shared_ptr<core::Context> ctx, const Pool2DParams& params, core::DType dtype)
    : ctx_(std::move(ctx)), p_(checked(params, "MaxPool2D")), dtype_(dtype) {
  core::cuda::gpu_context_of(*ctx_);
  argmax_ = DeviceBuffer(ctx_, static_cast<size_t>(p_.N * p_.C * p_.out_h() * p_.out_w()) * sizeof(int32_t));
}

void MaxPool2D::forward_training(const void* x, void* y) {
  require_ptr(x, "MaxPool2D", "x");
  require_ptr(y, "MaxPool2D", "y");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::max_pool_forward(gpu.stream(), dtype_, shape_of(p_), x, y, argmax_.as<int32_t>());
  have_argmax_ = true;
}

void MaxPool2D::forward_inference(const void* x, void* y) {
  require_ptr(x, "MaxPool2D", "x");
  require_ptr(y, "MaxPool2D", "y");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::max_pool_forward(gpu.stream(), dtype_, shape_of(p_), x, y, nullptr);
}

void MaxPool2D::backward(const void* dy, void* dx) {
  if (!have_argmax_) throw std::logic_error("MaxPool2D: backward before any forward_training");
  require_ptr(dy, "MaxPool2D", "dy");
  require_ptr(dx, "MaxPool2D", "dx");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::max_pool_backward(gpu.stream(), dtype_, shape_of(p_), dy, argmax_.as<int32_t>(), dx);
}

AvgPool2D::AvgPool2D(std::shared_ptr<core::Context> ctx, const Pool2DParams& params, bool count_include_pad,
                     core::DType dtype)
    : ctx_(std::move(ctx)), p_(checked(params, "AvgPool2D")), count_include_pad_(count_include_pad), dtype_(dtype) {
  core::cuda::gpu_context_of(*ctx_);
}

void AvgPool2D::forward(const void* x, void* y) {
  require_ptr(x, "AvgPool2D", "x");
  require_ptr(y, "AvgPool2D", "y");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::avg_pool_forward(gpu.stream(), dtype_, shape_of(p_), count_include_pad_, x, y);
}

void AvgPool2D::backward(const void* dy, void* dx) {
  require_ptr(dy, "AvgPool2D", "dy");
  require_ptr(dx, "AvgPool2D", "dx");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::avg_pool_backward(gpu.stream(), dtype_, shape_of(p_), count_include_pad_, dy, dx);
}

GlobalAvgPool2D::GlobalAvgPool2D(std::shared_ptr<core::Context> ctx, int64_t N, int64_t C, int64_t H, int64_t W,
                                 core::DType dtype, TensorLayout layout)
    : ctx_(std::move(ctx)), dtype_(dtype), rows_(N * C), plane_(H * W), channels_(C), layout_(layout) {
  require(N > 0 && C > 0 && H > 0 && W > 0, "GlobalAvgPool2D", "N, C, H, W must be positive");
  require(rows_ <= INT_MAX, "GlobalAvgPool2D", "N * C must fit the grid's int");
  core::cuda::gpu_context_of(*ctx_);
}

void GlobalAvgPool2D::forward(const void* x, void* y) const {
  require_ptr(x, "GlobalAvgPool2D", "x");
  require_ptr(y, "GlobalAvgPool2D", "y");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::global_avg_pool_forward(gpu.stream(), dtype_, rows_, plane_, x, y, channels_, layout_);
}

void GlobalAvgPool2D::backward(const void* dy, void* dx) const {
  require_ptr(dy, "GlobalAvgPool2D", "dy");
  require_ptr(dx, "GlobalAvgPool2D", "dx");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  kernels::global_avg_pool_backward(gpu.stream(), dtype_, rows_, plane_, dy, dx, channels_, layout_);
}

}  // namespace dt::ops::cuda
