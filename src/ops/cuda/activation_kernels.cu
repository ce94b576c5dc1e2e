// Elementwise activations (relu, sigmoid, tanh), forward and backward.
// Launchers in ops/cuda/layer_kernels.h.
#include "ops/cuda/layer_kernels.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/element_access.cuh"
#include "ops/cuda/layer_kernel_launch.cuh"

namespace dt::ops::cuda::kernels {

namespace {

// The formulas of oneDNN's eltwise kernels that the CPU ops use: relu as
// x > 0 ? x : x * 0 (NaN stays NaN), derivatives from the output.
template <typename T>
__global__ void activation_forward_kernel(ActivationKind kind, const T* x, T* y, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const float v = load_float(x, i);
    float out = 0.0f;
    switch (kind) {
      case ActivationKind::kRelu: out = v > 0.0f ? v : v * 0.0f; break;
      case ActivationKind::kSigmoid: out = 1.0f / (1.0f + expf(-v)); break;
      case ActivationKind::kTanh: out = tanhf(v); break;
    }
    store_float(y, i, out);
  }
}

template <typename T>
__global__ void activation_backward_kernel(ActivationKind kind, const T* y, const T* dy, T* dx, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const float out = load_float(y, i), g = load_float(dy, i);
    float d = 0.0f;
    switch (kind) {
      case ActivationKind::kRelu: d = out > 0.0f ? g : g * 0.0f; break;
      case ActivationKind::kSigmoid: d = g * out * (1.0f - out); break;
      case ActivationKind::kTanh: d = g * (1.0f - out) * (1.0f + out); break;
    }
    store_float(dx, i, d);
  }
}

}  // namespace

void activation_forward(cudaStream_t stream, core::DType dtype, ActivationKind kind, const void* x, void* y,
                        int64_t count) {
  dispatch_activation_dtype(dtype, "activation_forward", [&](auto tag) {
    using T = decltype(tag);
    activation_forward_kernel<T><<<blocks_for(count), kBlockSize, 0, stream>>>(kind, typed<T>(x), typed<T>(y), count);
    check_launch();
  });
}

void activation_backward(cudaStream_t stream, core::DType dtype, ActivationKind kind, const void* y, const void* dy,
                         void* dx, int64_t count) {
  dispatch_activation_dtype(dtype, "activation_backward", [&](auto tag) {
    using T = decltype(tag);
    activation_backward_kernel<T><<<blocks_for(count), kBlockSize, 0, stream>>>(kind, typed<T>(y), typed<T>(dy),
                                                                                typed<T>(dx), count);
    check_launch();
  });
}

}  // namespace dt::ops::cuda::kernels
