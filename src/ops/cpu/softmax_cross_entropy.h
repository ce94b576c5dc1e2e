#pragma once

#include <cstdint>
#include <vector>

#include "ops/softmax_cross_entropy.h"

namespace dt::ops::cpu {

// ops::SoftmaxCrossEntropy on the CPU. Stable for any finite logits: each
// row is shifted by its maximum before exponentiation. Plain loops: at
// (64, 10) the work is below oneDNN's per-call cost.
class SoftmaxCrossEntropy final : public ops::SoftmaxCrossEntropy {
 public:
  SoftmaxCrossEntropy(int64_t N, int64_t classes, Reduction reduction = Reduction::kMean);

  // Returns the loss (mean or sum over the batch). A label outside
  // [0, classes) is std::invalid_argument.
  float forward(const float* logits, const int32_t* labels) override;
  float forward(const float* logits, const int64_t* labels) override;

  // dlogits = dloss * (softmax - onehot), divided by N for kMean; requires a
  // preceding forward (std::logic_error otherwise).
  void backward(float* dlogits, float dloss = 1.0f) const override;

  // Softmax of the latest forward, N x classes.
  const std::vector<float>& probabilities() const { return prob_; }

 private:
  template <typename Label>
  float forward_impl(const float* logits, const Label* labels);

  int64_t n_;
  int64_t classes_;
  Reduction reduction_;
  std::vector<float> prob_;
  std::vector<int64_t> labels_;
  bool have_forward_ = false;
};

}  // namespace dt::ops::cpu
