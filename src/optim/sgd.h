// Stochastic gradient descent with MXNet's rules, momentum and Nesterov
// momentum included. Every update first forms
//   g = clip(rescale_grad * grad, -clip_gradient, clip_gradient) + wd * w
// (no clipping when clip_gradient <= 0), then:
//   plain (momentum 0):  w = w - lr * g
//   momentum (MXNet sgd_mom_update; the velocity carries lr):
//                        mom = momentum * mom - lr * g;  w = w + mom
//   nesterov (MXNet NAG / nag_mom_update):
//                        mom = momentum * mom + g;       w = w - lr * (g + momentum * mom)
// With a constant lr the momentum rule equals PyTorch's SGD (buf = momentum *
// buf + g; w -= lr * buf), and the Nesterov rule equals PyTorch's nesterov=True.
#pragma once

#include "optim/optimizer.h"

namespace dt::optim {

class Sgd final : public Optimizer {
 public:
  // config: validated, named "sgd" (learning_rate 0.1, momentum 0, nesterov
  // false by default) or "nag" (learning_rate 0.1, momentum 0.9, always
  // nesterov), as MXNet 2's SGD and NAG.
  explicit Sgd(const OptimizerConfig& config);

 private:
  void apply(const core::NDArray& weight, const core::NDArray& grad, const KeyState& state,
             const Step& step) const override;

  double momentum_;
  bool nesterov_;
};

}  // namespace dt::optim
