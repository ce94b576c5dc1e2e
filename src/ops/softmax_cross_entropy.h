// The fused softmax + negative log-likelihood op over (N, classes) float32
// logits with integer class labels. One interface over the CPU kernel
// (ops/cpu/softmax_cross_entropy.h) and the GPU one
// (ops/cuda/softmax_cross_entropy.h); make_softmax_cross_entropy picks by
// target (which needs no engine: the CPU kernel is plain loops).
#pragma once

#include <cstdint>
#include <memory>

#include "ops/target.h"

namespace dt::ops {

enum class Reduction { kMean, kSum };

// forward() keeps the softmax probabilities and the labels, so backward()
// needs neither again. Arrays are on the target's device. Not thread-safe.
class SoftmaxCrossEntropy {
 public:
  virtual ~SoftmaxCrossEntropy() = default;

  // Returns the loss (mean or sum over the batch). A label outside
  // [0, classes) is std::invalid_argument.
  virtual float forward(const float* logits, const int32_t* labels) = 0;
  virtual float forward(const float* logits, const int64_t* labels) = 0;

  // dlogits = dloss * (softmax - onehot), divided by N for kMean; requires a
  // preceding forward (std::logic_error otherwise).
  virtual void backward(float* dlogits, float dloss) const = 0;
};

std::unique_ptr<SoftmaxCrossEntropy> make_softmax_cross_entropy(const Target& target, int64_t N, int64_t classes,
                                                                Reduction reduction);

}  // namespace dt::ops
