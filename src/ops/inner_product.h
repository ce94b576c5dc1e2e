// A fully connected layer's op: y (N, out) = x (N, in) W^T + b, with W
// stored (out, in) as in PyTorch and MXNet. One interface over the CPU
// kernel (ops/cpu/inner_product.h, oneDNN) and the GPU one
// (ops/cuda/inner_product.h, cuBLAS); make_inner_product picks by target.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/target.h"

namespace dt::ops {

struct InnerProductParams {
  int64_t N = 0;
  int64_t in = 0;
  int64_t out = 0;
  bool has_bias = true;
};

// One fixed shape. Pointers are plain row-major arrays on the target's
// device; x, w, y and their gradients are of the target's dtype, the bias
// and its gradient float32. Outputs are overwritten. Not thread-safe. A bad
// shape or a null pointer is std::invalid_argument.
class InnerProduct {
 public:
  virtual ~InnerProduct() = default;

  // b is ignored without bias.
  virtual void forward(const void* x, const void* w, const float* b, void* y) = 0;
  virtual void backward_data(const void* dy, const void* w, void* dx) = 0;
  // db is ignored without bias.
  virtual void backward_weights(const void* x, const void* dy, void* dw, float* db) = 0;
};

std::unique_ptr<InnerProduct> make_inner_product(const Target& target, const InnerProductParams& params);

}  // namespace dt::ops
