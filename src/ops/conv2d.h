// A 2-d convolution's op over NCHW or NHWC activations and OIHW weights. One
// interface over the CPU kernel (ops/cpu/conv2d.h, oneDNN) and the GPU one
// (ops/cuda/conv2d.h, cuDNN); make_conv2d picks by target.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/target.h"
#include "ops/tensor_layout.h"

namespace dt::ops {

// Shape of a 2-d convolution. Activations are in `layout` (x's dims are
// the logical N, C, H, W either way), weights OIHW in both (for groups > 1:
// K x C/groups x R x S, the same bytes as PyTorch and MXNet use): the
// parameters a user, a checkpoint and a kvstore see do not depend on the
// activations' layout. Bias has K elements. Dilation 1 means a dense kernel,
// as in PyTorch/MXNet.
struct Conv2DParams {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t K = 0;  // output channels
  int64_t R = 1, S = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // zero padding, both sides
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool has_bias = true;
  TensorLayout layout = TensorLayout::kNCHW;

  int64_t out_h() const;
  int64_t out_w() const;
  // std::invalid_argument naming the first impossible value; every
  // device's kernel checks the same shape rules.
  void validate() const;
};

// A convolution for one fixed shape; the pointers passed to the calls are
// always plain arrays on the target's device. x, w, y and their gradients
// are of the target's dtype, the bias and its gradient float32. Outputs are
// overwritten, never accumulated. Not thread-safe.
class Conv2D {
 public:
  virtual ~Conv2D() = default;

  // y[N,K,P,Q] = conv(x[N,C,H,W], w) + b; b is ignored without bias.
  virtual void forward(const void* x, const void* w, const float* b, void* y) = 0;
  // dx = gradient with respect to x given dy.
  virtual void backward_data(const void* dy, const void* w, void* dx) = 0;
  // dw, db = gradients with respect to w and b; db is ignored without bias.
  virtual void backward_weights(const void* x, const void* dy, void* dw, float* db) = 0;
};

// Whether this build has a GPU convolution (it needs cuDNN); without one,
// make_conv2d on a GPU target is Error(kNotSupported).
bool gpu_conv2d_available();

std::unique_ptr<Conv2D> make_conv2d(const Target& target, const Conv2DParams& params);

}  // namespace dt::ops
