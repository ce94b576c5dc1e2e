// The own CUDA kernels behind the GPU layer ops (ops/cuda/{pooling,
// batch_norm,eltwise,softmax_cross_entropy,conv2d,inner_product}.h). Plain
// pointers and sizes only, so that nvcc never has to parse the ops' C++
// interfaces (ops/*.h). Each launcher queues its kernels on `stream` and
// returns at once; arguments are already checked by the op.
// 4-d arrays are NCHW or, where a launcher takes a layout, NHWC, indexed
// through ops/layout_index.h (the functions the CPU tests check). Activations and their gradients (void*) are of
// `dtype`: float32, float16 or bfloat16 (a mixed-precision net's compute
// dtype), read as float, computed and accumulated in float, stored rounded
// to nearest even. Per-channel parameters and statistics (float*) are
// float32 whatever the activations, as cuDNN and PyTorch's AMP keep them.
// Defined in one .cu file per kind of layer (channel_bias_, pooling_,
// batch_norm_, activation_, softmax_cross_entropy_kernels.cu), over the
// launch helpers of layer_kernel_launch.cuh.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "ops/layout_index.h"

namespace dt::ops::cuda::kernels {

// y[n, c, i] += bias[c] for y of N x C x inner (NHWC: N x inner x C).
void add_channel_bias(cudaStream_t stream, core::DType dtype, void* y, const float* bias, int64_t N, int64_t C,
                      int64_t inner, TensorLayout layout = TensorLayout::kNCHW);
// out[c] = sum over n and i of x[n, c, i] (bias gradients), in float32.
void sum_per_channel(cudaStream_t stream, core::DType dtype, const void* x, float* out, int64_t N, int64_t C,
                     int64_t inner, TensorLayout layout = TensorLayout::kNCHW);

// One pooling window over `planes` = N * C planes of H x W into P x Q, in
// `layout` (NHWC: the C planes of a sample interleaved).
struct PoolShape {
  int64_t planes = 0, H = 0, W = 0, P = 0, Q = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 0, stride_w = 0, pad_h = 0, pad_w = 0;
  int64_t C = 1;
  TensorLayout layout = TensorLayout::kNCHW;
};
// argmax (offset h * W + w within the input plane, one per output, laid out
// as the output) is written when not null. As on the CPU: padding never wins, the first maximum in row-major
// window order wins ties, and NaN always wins.
void max_pool_forward(cudaStream_t stream, core::DType dtype, const PoolShape& shape, const void* x, void* y,
                      int32_t* argmax);
void max_pool_backward(cudaStream_t stream, core::DType dtype, const PoolShape& shape, const void* dy,
                       const int32_t* argmax, void* dx);
void avg_pool_forward(cudaStream_t stream, core::DType dtype, const PoolShape& shape, bool count_include_pad,
                      const void* x, void* y);
void avg_pool_backward(cudaStream_t stream, core::DType dtype, const PoolShape& shape, bool count_include_pad,
                       const void* dy, void* dx);
// rows = N * C planes of `plane` elements each, averaged to one value per
// row (y is N x C in either layout).
void global_avg_pool_forward(cudaStream_t stream, core::DType dtype, int64_t rows, int64_t plane, const void* x,
                             void* y, int64_t C = 1, TensorLayout layout = TensorLayout::kNCHW);
void global_avg_pool_backward(cudaStream_t stream, core::DType dtype, int64_t rows, int64_t plane, const void* dy,
                              void* dx, int64_t C = 1, TensorLayout layout = TensorLayout::kNCHW);

// The per-channel sums of batch norm run in (channel, split) blocks, each
// summing its channel over a fixed range of samples: how many splits, and
// the float scratch the two kernels below need (batch_norm_scratch floats,
// device memory the caller owns until the work queued on stream is done).
// inner must fit 31 bits.
int64_t batch_norm_splits(int64_t N, int64_t C, int64_t inner);
size_t batch_norm_scratch(int64_t N, int64_t C, int64_t inner);

// Batch statistics of x (N x C x inner) per channel: mean and biased
// variance into mean/var, and running = (1 - momentum) * running + momentum
// * statistic, the variance scaled by unbias first.
void batch_norm_statistics(cudaStream_t stream, core::DType dtype, const void* x, int64_t N, int64_t C,
                           int64_t inner, float momentum, float unbias, float* mean, float* var, float* running_mean,
                           float* running_var, float* scratch, TensorLayout layout = TensorLayout::kNCHW);
// y = gamma * (x - mean) / sqrt(var + eps) + beta, per channel.
void batch_norm_apply(cudaStream_t stream, core::DType dtype, const void* x, const float* gamma, const float* beta,
                      const float* mean, const float* var, float eps, int64_t N, int64_t C, int64_t inner, void* y,
                      TensorLayout layout = TensorLayout::kNCHW);
// dbeta = sum dy, dgamma = sum dy * xhat, then
// dx = gamma / sqrt(var + eps) * (dy - dbeta / M - xhat * dgamma / M), M = N * inner.
void batch_norm_backward(cudaStream_t stream, core::DType dtype, const void* x, const void* dy, const float* gamma,
                         const float* mean, const float* var, float eps, int64_t N, int64_t C, int64_t inner,
                         void* dx, float* dgamma, float* dbeta, float* scratch,
                         TensorLayout layout = TensorLayout::kNCHW);

enum class ActivationKind { kRelu, kSigmoid, kTanh };
void activation_forward(cudaStream_t stream, core::DType dtype, ActivationKind kind, const void* x, void* y,
                        int64_t count);
// From the forward output y, as the CPU kernel does; dx may alias dy.
void activation_backward(cudaStream_t stream, core::DType dtype, ActivationKind kind, const void* y, const void* dy,
                         void* dx, int64_t count);

// The loss is float32 only: a mixed-precision net casts its logits up first.
// Softmax over each row of logits (N x classes) into prob, each row's
// negative log-likelihood into row_loss, the labels widened into labels_out.
// A label outside [0, classes) makes that row's loss 0 and lowers *bad_row
// (set to UINT64_MAX by the caller) to the smallest such row.
void softmax_cross_entropy_forward(cudaStream_t stream, const float* logits, const int32_t* labels, int64_t N,
                                   int64_t classes, float* prob, int64_t* labels_out, double* row_loss,
                                   unsigned long long* bad_row);
void softmax_cross_entropy_forward(cudaStream_t stream, const float* logits, const int64_t* labels, int64_t N,
                                   int64_t classes, float* prob, int64_t* labels_out, double* row_loss,
                                   unsigned long long* bad_row);
// *total = sum of values[0..count).
void sum_doubles(cudaStream_t stream, const double* values, int64_t count, double* total);
// dlogits = scale * (prob - onehot(labels)).
void softmax_cross_entropy_backward(cudaStream_t stream, const float* prob, const int64_t* labels, int64_t N,
                                    int64_t classes, float scale, float* dlogits);

}  // namespace dt::ops::cuda::kernels
