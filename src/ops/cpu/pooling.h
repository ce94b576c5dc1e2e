#pragma once

#include <cstdint>
#include <memory>

#include "ops/cpu/cpu_engine.h"

namespace dt::ops::cpu {

// Shape of a 2-d pooling window over NCHW. Output extents round down
// (PyTorch/MXNet "valid" convention); padding may be at most half the window.
struct Pool2DParams {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t kernel_h = 2, kernel_w = 2;
  int64_t stride_h = 2, stride_w = 2;
  int64_t pad_h = 0, pad_w = 0;

  int64_t out_h() const;
  int64_t out_w() const;
};

// Max pooling; padding never wins the max, NaN always does. backward()
// routes gradients through the argmax recorded by the latest
// forward_training(), which the object keeps, so it must come after one
// (std::logic_error otherwise). Outputs are overwritten. Not thread-safe.
// Plain loops parallelised over planes with num_threads() of the engine.
// A moved-from object (here and below) may only be destroyed or assigned to.
class MaxPool2D {
 public:
  MaxPool2D(const CpuEngine& engine, const Pool2DParams& params);
  ~MaxPool2D();
  MaxPool2D(MaxPool2D&&) noexcept;
  MaxPool2D& operator=(MaxPool2D&&) noexcept;

  const Pool2DParams& params() const;
  void forward_training(const float* x, float* y);
  void forward_inference(const float* x, float* y);
  void backward(const float* dy, float* dx);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Average pooling. count_include_pad: divide by the full window even where
// it overlaps padding (PyTorch's default) rather than by the valid part.
class AvgPool2D {
 public:
  AvgPool2D(const CpuEngine& engine, const Pool2DParams& params, bool count_include_pad);
  ~AvgPool2D();
  AvgPool2D(AvgPool2D&&) noexcept;
  AvgPool2D& operator=(AvgPool2D&&) noexcept;

  const Pool2DParams& params() const;
  void forward(const float* x, float* y);
  void backward(const float* dy, float* dx);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Mean over H and W: x is N x C x H x W, y is N x C. Plain loops, as for
// max pooling.
class GlobalAvgPool2D {
 public:
  GlobalAvgPool2D(const CpuEngine& engine, int64_t N, int64_t C, int64_t H, int64_t W);

  void forward(const float* x, float* y) const;
  void backward(const float* dy, float* dx) const;

 private:
  int threads_;
  int64_t rows_;   // N * C
  int64_t plane_;  // H * W
};

}  // namespace dt::ops::cpu
