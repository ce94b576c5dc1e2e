// The cuDNN side of choosing a convolution's algorithms
// (ops/conv_algorithm_choice.h has the rule, ops/conv_algorithm_cache.h the
// per-context cache): on a miss in the context's cache, by the context's
// mode (MXNET_CUDNN_AUTOTUNE_DEFAULT, read when the context's first
// convolution is built) either cuDNN's heuristics (cudnnGet*_v7, nothing
// run) or a search that times every algorithm of each direction once
// (cudnnFind*AlgorithmEx) on scratch tensors and a scratch workspace from
// the context's caching allocator, never on the caller's arrays. A search
// that fails (out of memory for its scratch tensors, a cuDNN error) logs one
// warning and the heuristics choose instead; the fallback is cached as well,
// so the shape is not searched again on this context.
//
// A search synchronises the context's stream (cudnnFind* runs the kernels
// and waits for them), once per key.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <memory>

#include "core/cuda/gpu_context.h"
#include "ops/conv_algorithm_cache.h"

namespace dt::ops::cuda {

// The descriptors of one convolution, as Conv2D sets them up, and the bytes
// of its x, w and y (scratch tensors of these sizes are what a search runs
// on).
struct ConvProblem {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  size_t x_bytes = 0, w_bytes = 0, y_bytes = 0;
  bool float32 = true;  // the rule's float32 (no tensor-op candidates)
};

// The context's convolution algorithm cache, made on first use.
ConvAlgorithmCache& conv_algorithm_cache(core::cuda::GpuContext& gpu);

// The algorithms for key: the context's cached choice, else chosen as
// above and cached. Error(kNotSupported) when cuDNN offers no usable
// algorithm for a direction; Error(kInvalidArgument) for a malformed
// MXNET_CUDNN_AUTOTUNE_DEFAULT.
// ctx must be a GPU context (Error(kInternal) otherwise).
ConvAlgorithms conv_algorithms(const std::shared_ptr<core::Context>& ctx, const ConvAlgorithmKey& key,
                               const ConvProblem& problem);

}  // namespace dt::ops::cuda
