// 2-d pooling ops over NCHW or NHWC: max, average and global average. One interface
// each over the CPU kernels (ops/cpu/pooling.h) and the GPU ones
// (ops/cuda/pooling.h); the make_* functions pick by target.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/target.h"
#include "ops/tensor_layout.h"

namespace dt::ops {

// Shape of a 2-d pooling window over logical (N, C, H, W) in `layout`.
// Output extents round down (PyTorch/MXNet "valid" convention); padding may
// be at most half the window.
struct Pool2DParams {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t kernel_h = 2, kernel_w = 2;
  int64_t stride_h = 2, stride_w = 2;
  int64_t pad_h = 0, pad_w = 0;
  TensorLayout layout = TensorLayout::kNCHW;

  int64_t out_h() const;
  int64_t out_w() const;
};

// Arrays are on the target's device, of its dtype; outputs are overwritten.
// Not thread-safe.

// Max pooling; padding never wins the max, NaN always does. backward()
// routes gradients through the argmax recorded by the latest
// forward_training(), which the object keeps, so it must come after one
// (std::logic_error otherwise).
class MaxPool2D {
 public:
  virtual ~MaxPool2D() = default;
  virtual void forward_training(const void* x, void* y) = 0;
  virtual void forward_inference(const void* x, void* y) = 0;
  virtual void backward(const void* dy, void* dx) = 0;
};

// Average pooling. count_include_pad: divide by the full window even where
// it overlaps padding (PyTorch's default) rather than by the valid part.
class AvgPool2D {
 public:
  virtual ~AvgPool2D() = default;
  virtual void forward(const void* x, void* y) = 0;
  virtual void backward(const void* dy, void* dx) = 0;
};

// Mean over H and W: x is logical N x C x H x W in its layout, y is N x C
// (the same bytes as N x C x 1 x 1 in either layout).
class GlobalAvgPool2D {
 public:
  virtual ~GlobalAvgPool2D() = default;
  virtual void forward(const void* x, void* y) const = 0;
  virtual void backward(const void* dy, void* dx) const = 0;
};

std::unique_ptr<MaxPool2D> make_max_pool2d(const Target& target, const Pool2DParams& params);
std::unique_ptr<AvgPool2D> make_avg_pool2d(const Target& target, const Pool2DParams& params,
                                           bool count_include_pad);
std::unique_ptr<GlobalAvgPool2D> make_global_avg_pool2d(const Target& target, int64_t N, int64_t C, int64_t H,
                                                        int64_t W, TensorLayout layout = TensorLayout::kNCHW);

}  // namespace dt::ops
