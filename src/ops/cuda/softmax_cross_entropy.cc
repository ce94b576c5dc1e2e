#include "ops/cuda/softmax_cross_entropy.h"

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_copy.h"
#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "ops/cuda/layer_kernels.h"

namespace dt::ops::cuda {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(std::shared_ptr<core::Context> ctx, int64_t N, int64_t classes,
                                         Reduction reduction)
    : ctx_(std::move(ctx)), n_(N), classes_(classes), reduction_(reduction) {
  if (N <= 0 || classes <= 0) throw std::invalid_argument("SoftmaxCrossEntropy: N and classes must be positive");
  if (N > INT_MAX) throw std::invalid_argument("SoftmaxCrossEntropy: N must fit the grid's int");
  if (reduction != Reduction::kMean && reduction != Reduction::kSum) {
    throw std::invalid_argument("SoftmaxCrossEntropy: unknown reduction");
  }
  core::cuda::gpu_context_of(*ctx_);
  prob_ = DeviceBuffer(ctx_, static_cast<size_t>(N * classes) * sizeof(float));
  labels_ = DeviceBuffer(ctx_, static_cast<size_t>(N) * sizeof(int64_t));
  row_loss_ = DeviceBuffer(ctx_, static_cast<size_t>(N + 1) * sizeof(double));
  bad_row_ = DeviceBuffer(ctx_, sizeof(unsigned long long));
}

float SoftmaxCrossEntropy::forward(const float* logits, const int32_t* labels) { return forward_impl(logits, labels); }
float SoftmaxCrossEntropy::forward(const float* logits, const int64_t* labels) { return forward_impl(logits, labels); }

template <typename Label>
float SoftmaxCrossEntropy::forward_impl(const float* logits, const Label* labels) {
  if (logits == nullptr || labels == nullptr) {
    throw std::invalid_argument("SoftmaxCrossEntropy: logits and labels must not be null");
  }
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  have_forward_ = false;
  // All bits set: no bad row; the kernel lowers it to the first bad one.
  DT_CUDA_CHECK(cudaMemsetAsync(bad_row_.get(), 0xff, sizeof(unsigned long long), gpu.stream()));
  double* row_loss = row_loss_.as<double>();
  kernels::softmax_cross_entropy_forward(gpu.stream(), logits, labels, n_, classes_, prob_.as<float>(),
                                         labels_.as<int64_t>(), row_loss, bad_row_.as<unsigned long long>());
  // Accumulated in double, as on the CPU; the total goes in the slot after the rows.
  kernels::sum_doubles(gpu.stream(), row_loss, n_, row_loss + n_);
  unsigned long long bad_row = 0;
  double total = 0.0;
  core::cuda::copy_to_host(&bad_row, *ctx_, bad_row_.get(), sizeof(bad_row));
  core::cuda::copy_to_host(&total, *ctx_, row_loss + n_, sizeof(total));
  if (bad_row != ~0ULL) {
    Label label{};
    core::cuda::copy_to_host(&label, *ctx_, labels + bad_row, sizeof(label));
    throw std::invalid_argument("SoftmaxCrossEntropy: label " + std::to_string(label) + " at row " +
                                std::to_string(bad_row) + " is outside [0, " + std::to_string(classes_) + ")");
  }
  have_forward_ = true;
  return static_cast<float>(reduction_ == Reduction::kMean ? total / static_cast<double>(n_) : total);
}

void SoftmaxCrossEntropy::backward(float* dlogits, float dloss) const {
  if (!have_forward_) throw std::logic_error("SoftmaxCrossEntropy: backward before forward");
  if (dlogits == nullptr) throw std::invalid_argument("SoftmaxCrossEntropy: dlogits is null");
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx_);
  core::cuda::DeviceGuard guard(gpu.device_id());
  const float scale = reduction_ == Reduction::kMean ? dloss / static_cast<float>(n_) : dloss;
  kernels::softmax_cross_entropy_backward(gpu.stream(), prob_.as<float>(), labels_.as<int64_t>(), n_, classes_,
                                          scale, dlogits);
}

}  // namespace dt::ops::cuda
