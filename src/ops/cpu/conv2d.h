#pragma once

#include <cstdint>
#include <memory>

#include "ops/cpu/cpu_engine.h"

namespace dt::ops::cpu {

// Shape of a 2-d convolution. Activations are NCHW, weights OIHW (for
// groups > 1: K x C/groups x R x S, the same bytes as PyTorch and MXNet use),
// bias has K elements. Dilation 1 means a dense kernel, as in PyTorch/MXNet.
struct Conv2DParams {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t K = 0;  // output channels
  int64_t R = 1, S = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // zero padding, both sides
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool has_bias = true;

  int64_t out_h() const;
  int64_t out_w() const;
  // std::invalid_argument naming the first impossible value; every
  // device's kernel checks the same shape rules.
  void validate() const;
};

// A convolution for one fixed shape. The constructor validates the shape
// (std::invalid_argument) and creates the oneDNN primitives, which may pick
// blocked layouts internally; the pointers passed to the calls are always
// plain. Outputs are overwritten, never accumulated. Not thread-safe: one
// call at a time per object. A moved-from object may only be destroyed or
// assigned to.
class Conv2D {
 public:
  Conv2D(const CpuEngine& engine, const Conv2DParams& params);
  ~Conv2D();
  Conv2D(Conv2D&&) noexcept;
  Conv2D& operator=(Conv2D&&) noexcept;

  const Conv2DParams& params() const;

  // y[N,K,P,Q] = conv(x[N,C,H,W], w) + b; b is ignored without bias.
  void forward(const float* x, const float* w, const float* b, float* y);
  // dx = gradient with respect to x given dy.
  void backward_data(const float* dy, const float* w, float* dx);
  // dw, db = gradients with respect to w and b; db is ignored without bias.
  void backward_weights(const float* x, const float* dy, float* dw, float* db);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cpu
