#pragma once

#include <cstdint>
#include <memory>

#include "ops/conv2d.h"
#include "ops/cpu/cpu_engine.h"

namespace dt::ops::cpu {

// A convolution for one fixed shape. The constructor validates the shape
// (std::invalid_argument) and creates the oneDNN primitives, which may pick
// blocked layouts internally; the pointers passed to the calls are always
// plain. Outputs are overwritten, never accumulated. Not thread-safe: one
// call at a time per object. A moved-from object may only be destroyed or
// assigned to.
class Conv2D final : public ops::Conv2D {
 public:
  Conv2D(const CpuEngine& engine, const Conv2DParams& params);
  ~Conv2D() override;
  Conv2D(Conv2D&&) noexcept;
  Conv2D& operator=(Conv2D&&) noexcept;

  const Conv2DParams& params() const;

  // y[N,K,P,Q] = conv(x[N,C,H,W], w) + b; b is ignored without bias.
  void forward(const void* x, const void* w, const float* b, void* y) override;
  // dx = gradient with respect to x given dy.
  void backward_data(const void* dy, const void* w, void* dx) override;
  // dw, db = gradients with respect to w and b; db is ignored without bias.
  void backward_weights(const void* x, const void* dy, void* dw, float* db) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cpu
