// ComputeParameters: a mixed-precision net's parameters as its layers see
// them. The net's own parameters (the masters) stay float32: optimizers,
// kvstores and checkpoints see only them. Each master has a view here, index
// for index:
//  - a weight its layer reads in the compute dtype (ParamSpec's
//    in_compute_dtype: Dense and Conv2D weights) gets a float16 / bfloat16
//    copy of the value, cast from the master by refresh_values(), and a
//    gradient of that dtype;
//  - other learnable parameters (biases, BatchNorm's gamma and beta) share
//    the master's float32 value and get a float32 gradient of their own;
//  - auxiliary states (BatchNorm running statistics) are the masters' own
//    arrays, updated in place.
// Layers always write a view's gradient whole (kWrite, or kNull where the
// master's is kNull); finish_gradient() then casts it into the master's
// float32 gradient by the master's grad_req (write or add), multiplying by
// 1 / loss scale on the way: the gradient casting of mixed precision.
#pragma once

#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "nn/parameter.h"

namespace dt::nn {

class ComputeParameters {
 public:
  // masters live on a GPU and outlive this object (the net owns both);
  // in_compute_dtype has one flag per master. dtype is float16 or bfloat16;
  // Error(kNotSupported) on a CPU or in a build without CUDA.
  ComputeParameters(std::vector<Parameter>& masters, const std::vector<bool>& in_compute_dtype, core::DType dtype);

  core::DType dtype() const { return dtype_; }
  Parameter& view(size_t index) { return views_.at(index); }

  // Casts every master value a layer reads in the compute dtype into its
  // copy (queued on the context's stream).
  void refresh_values();
  // Each view's grad_req from its master's: kNull stays kNull, kWrite and
  // kAdd become kWrite (the accumulation happens in finish_gradient).
  void sync_grad_reqs();
  // master gradient (=, or += for kAdd) float32(view gradient) * scale.
  // Nothing for an auxiliary state or a kNull master.
  void finish_gradient(size_t index, float scale);

 private:
  std::vector<Parameter>& masters_;
  std::vector<Parameter> views_;
  std::vector<bool> in_compute_dtype_;
  core::DType dtype_;
};

}  // namespace dt::nn
