// Softmax cross-entropy over rows of float32 logits, forward and backward,
// and the sum of the rows' losses. Launchers in ops/cuda/layer_kernels.h.
#include "ops/cuda/layer_kernels.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/element_access.cuh"
#include "ops/cuda/layer_kernel_launch.cuh"

namespace dt::ops::cuda::kernels {

namespace {

// One warp per row: classes are few (10 for Fashion-MNIST, 1000 for
// ImageNet), so a warp covers a row in a handful of steps.
constexpr unsigned kWarp = 32;

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename Label>
__global__ void softmax_cross_entropy_forward_kernel(const float* logits, const Label* labels, int64_t classes,
                                                     float* prob, int64_t* labels_out, double* row_loss,
                                                     unsigned long long* bad_row) {
  const int64_t r = blockIdx.x;
  const float* row = logits + r * classes;
  float* p = prob + r * classes;
  float max = -INFINITY;
  for (int64_t j = threadIdx.x; j < classes; j += kWarp) max = fmaxf(max, row[j]);
  max = warp_max(max);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += kWarp) {
    const float e = expf(row[j] - max);
    p[j] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  const float inv = 1.0f / sum;
  for (int64_t j = threadIdx.x; j < classes; j += kWarp) p[j] *= inv;
  if (threadIdx.x != 0) return;
  const int64_t label = static_cast<int64_t>(labels[r]);
  if (label < 0 || label >= classes) {
    atomicMin(bad_row, static_cast<unsigned long long>(r));
    labels_out[r] = 0;
    row_loss[r] = 0.0;
    return;
  }
  labels_out[r] = label;
  // From the shifted logits, not log(p): p may underflow to 0.
  row_loss[r] = static_cast<double>(logf(sum)) - static_cast<double>(row[label] - max);
}

__global__ void sum_doubles_kernel(const double* values, int64_t count, double* total) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += values[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *total = acc;
}

__global__ void softmax_cross_entropy_backward_kernel(const float* prob, const int64_t* labels, int64_t total,
                                                      int64_t classes, float scale, float* dlogits) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t r = i / classes, j = i - r * classes;
    const float d = prob[i] * scale;
    dlogits[i] = j == labels[r] ? d - scale : d;
  }
}

}  // namespace

void softmax_cross_entropy_forward(cudaStream_t stream, const float* logits, const int32_t* labels, int64_t N,
                                   int64_t classes, float* prob, int64_t* labels_out, double* row_loss,
                                   unsigned long long* bad_row) {
  softmax_cross_entropy_forward_kernel<<<static_cast<unsigned>(N), kWarp, 0, stream>>>(
      logits, labels, classes, prob, labels_out, row_loss, bad_row);
  check_launch();
}

void softmax_cross_entropy_forward(cudaStream_t stream, const float* logits, const int64_t* labels, int64_t N,
                                   int64_t classes, float* prob, int64_t* labels_out, double* row_loss,
                                   unsigned long long* bad_row) {
  softmax_cross_entropy_forward_kernel<<<static_cast<unsigned>(N), kWarp, 0, stream>>>(
      logits, labels, classes, prob, labels_out, row_loss, bad_row);
  check_launch();
}

void sum_doubles(cudaStream_t stream, const double* values, int64_t count, double* total) {
  sum_doubles_kernel<<<1, kReduceBlock, 0, stream>>>(values, count, total);
  check_launch();
}

void softmax_cross_entropy_backward(cudaStream_t stream, const float* prob, const int64_t* labels, int64_t N,
                                    int64_t classes, float scale, float* dlogits) {
  const int64_t total = N * classes;
  softmax_cross_entropy_backward_kernel<<<blocks_for(total), kBlockSize, 0, stream>>>(prob, labels, total, classes,
                                                                                      scale, dlogits);
  check_launch();
}

}  // namespace dt::ops::cuda::kernels
