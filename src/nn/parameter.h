// A named tensor of a network: a learnable weight with its gradient, or an
// auxiliary state (BatchNorm running statistics) that is saved and loaded
// with the weights but never gets a gradient and never goes to a kvstore.
#pragma once

#include <string>

#include "core/ndarray.h"
#include "nn/initializer.h"

namespace dt::nn {

// What backward does with a parameter's gradient, as MXNet's grad_req.
enum class GradReq : int {
  kNull = 0,   // no gradient is computed
  kWrite = 1,  // backward overwrites grad
  kAdd = 2,    // backward adds to grad (gradient accumulation over micro-batches)
};

struct Parameter {
  std::string name;  // "<layer>.<suffix>", e.g. "conv1.weight", "bn1.running_mean"
  core::NDArray value;
  core::NDArray grad;  // undefined for auxiliary states
  GradReq grad_req = GradReq::kWrite;
  bool auxiliary = false;
  Initializer init;
};

}  // namespace dt::nn
