#pragma once

#include <cstdint>
#include <memory>

#include "ops/cpu/cpu_engine.h"

namespace dt::ops::cpu {

// Shape of a fully connected layer: y (N, out) = x (N, in) W^T + b with
// W stored (out, in) as in PyTorch and MXNet.
struct InnerProductParams {
  int64_t N = 0;
  int64_t in = 0;
  int64_t out = 0;
  bool has_bias = true;
};

// Dense layer for one fixed shape. Pointers are plain row-major; outputs are
// overwritten. Not thread-safe. A moved-from object may only be destroyed
// or assigned to.
class InnerProduct {
 public:
  InnerProduct(const CpuEngine& engine, const InnerProductParams& params);
  ~InnerProduct();
  InnerProduct(InnerProduct&&) noexcept;
  InnerProduct& operator=(InnerProduct&&) noexcept;

  const InnerProductParams& params() const;

  // b is ignored without bias.
  void forward(const float* x, const float* w, const float* b, float* y);
  void backward_data(const float* dy, const float* w, float* dx);
  // db is ignored without bias.
  void backward_weights(const float* x, const float* dy, float* dw, float* db);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cpu
