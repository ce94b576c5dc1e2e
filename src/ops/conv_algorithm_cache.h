// The convolution algorithms chosen on one GPU context, per distinct
// problem: two layers of the same shape, and later nets on the same context,
// reuse a choice instead of searching again (a search times every algorithm
// and takes from milliseconds to seconds). One cache per GPU context, owned
// by it (core::cuda::GpuContext::attachment), never a process-wide one: the
// choice belongs to a device and a cuDNN handle, and the context's lifetime
// bounds the cache's. Kept apart from CUDA (algorithms as plain ints) so
// that the key and the cache are tested without a GPU.
//
// Thread-safe. Two threads that miss on the same key at once both search;
// the first value stored stays, so every layer of a key runs one choice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/dtype.h"
#include "ops/conv2d.h"
#include "ops/conv_algorithm_choice.h"

namespace dt::ops {

// What cuDNN's choice depends on: the shape parameters (the bias is added
// apart, so has_bias is not part of it), the data type, the convolution's
// math mode and the device.
struct ConvAlgorithmKey {
  int64_t N = 0, C = 0, H = 0, W = 0, K = 0, R = 0, S = 0;
  int64_t stride_h = 0, stride_w = 0, pad_h = 0, pad_w = 0, dilation_h = 0, dilation_w = 0;
  int64_t groups = 0;
  // cuDNN's algorithms and workspaces differ between NCHW and NHWC tensors.
  TensorLayout layout = TensorLayout::kNCHW;
  core::DType dtype = core::DType::kFloat32;
  ConvMath math = ConvMath::kFma;
  int device = 0;

  static ConvAlgorithmKey of(const Conv2DParams& p, core::DType dtype, ConvMath math, int device);
  bool operator==(const ConvAlgorithmKey& other) const;
  bool operator!=(const ConvAlgorithmKey& other) const { return !(*this == other); }
};

struct ConvAlgorithmKeyHash {
  size_t operator()(const ConvAlgorithmKey& key) const;
};

// One direction's algorithm (its cudnnConvolution*Algo_t) and the workspace
// it needs.
struct ConvAlgorithmChoice {
  int algorithm = 0;
  size_t workspace_bytes = 0;
};

struct ConvAlgorithms {
  ConvAlgorithmChoice forward, backward_data, backward_filter;
  // True when timed by a search; false for the heuristics' choice (mode 0,
  // or a search that failed and fell back).
  bool searched = false;
};

class ConvAlgorithmCache {
 public:
  // mode: how a miss is filled (the search reads it from here, so a
  // context's choices all follow one mode).
  explicit ConvAlgorithmCache(ConvAutotune mode) : mode_(mode) {}
  ConvAlgorithmCache(const ConvAlgorithmCache&) = delete;
  ConvAlgorithmCache& operator=(const ConvAlgorithmCache&) = delete;

  ConvAutotune mode() const { return mode_; }

  // The stored choice, counting a hit; nullopt (a miss) when none.
  std::optional<ConvAlgorithms> find(const ConvAlgorithmKey& key) const;
  // Stores algorithms for key unless a value is there already; returns the
  // stored value, which callers run.
  ConvAlgorithms insert(const ConvAlgorithmKey& key, const ConvAlgorithms& algorithms);

  size_t size() const;
  size_t hits() const;

 private:
  const ConvAutotune mode_;
  mutable std::mutex mutex_;
  std::unordered_map<ConvAlgorithmKey, ConvAlgorithms, ConvAlgorithmKeyHash> entries_;
  mutable size_t hits_ = 0;
};

}  // namespace dt::ops
