// Adam and AdamW with MXNet's rules. Every update first forms
//   g = clip(rescale_grad * grad, -clip_gradient, clip_gradient)   (no clipping when clip_gradient <= 0)
// and, for Adam only, adds the L2 term g += wd * w (MXNet Adam, PyTorch Adam's weight_decay). Then
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)        (bias correction, t = this key's update count)
//   Adam:  w = w - lr_t * m / (sqrt(v) + epsilon)
//   AdamW: w = w * (1 - lr * wd) - lr_t * m / (sqrt(v) + epsilon)
// AdamW decays the weight by the scheduled lr times wd, outside the adaptive
// step (Loshchilov & Hutter; PyTorch AdamW multiplies by 1 - lr * wd first).
// Folding the bias correction into lr_t is MXNet's form (and the Adam paper's
// "efficient" one); PyTorch divides m and v instead, which is the same rule
// with epsilon scaled by sqrt(1 - beta2^t): results differ only where
// sqrt(v) is comparable to epsilon.
#pragma once

#include "optim/optimizer.h"

namespace dt::optim {

class Adam final : public Optimizer {
 public:
  // config: validated, named "adam" (learning_rate 0.001, beta1 0.9, beta2
  // 0.999, epsilon 1e-8, wd 0, as MXNet) or "adamw" (the same, and wd 0.01 as
  // PyTorch AdamW).
  explicit Adam(const OptimizerConfig& config);

 private:
  void apply(const core::NDArray& weight, const core::NDArray& grad, const KeyState& state,
             const Step& step) const override;

  double beta1_;
  double beta2_;
  double epsilon_;
  bool decoupled_;
};

}  // namespace dt::optim
