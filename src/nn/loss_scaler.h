// LossScaler: dynamic loss scaling for float16 training, the state machine
// of PyTorch's torch.cuda.amp.GradScaler (and MXNet AMP's dynamic scaler).
// float16 gradients of small magnitude underflow to zero; multiplying the
// loss (so every gradient) by a scale S keeps them representable, and
// dividing the float32 gradients by S afterwards gives the true ones. S is
// as large as the gradients allow: it starts at init_scale, is multiplied by
// backoff_factor whenever a step's gradients hold an inf or NaN (that step's
// update is skipped), and by growth_factor after growth_interval steps in a
// row without one.
//
// Plain host state, no device: the net reports per step whether its
// gradients were finite, and this class says whether to apply the update.
// A disabled scaler (bfloat16, whose range is float32's, and float32) has
// scale 1 and never skips.
#pragma once

#include <cstdint>

namespace dt::nn {

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2^16, as GradScaler
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  // Disabled: scale 1, update() always true.
  LossScaler() = default;
  // Enabled. Error(kInvalidArgument) unless init_scale is finite and > 0,
  // growth_factor > 1, 0 < backoff_factor < 1 and growth_interval >= 1.
  explicit LossScaler(const LossScalerOptions& options);

  bool enabled() const { return enabled_; }
  const LossScalerOptions& options() const { return options_; }
  // The factor the loss gradient is multiplied by in the coming backward.
  double scale() const { return enabled_ ? scale_ : 1.0; }
  // Clean steps since the last growth or backoff.
  int64_t growth_tracker() const { return growth_tracker_; }
  // Steps whose update was skipped for non-finite gradients.
  int64_t skipped_steps() const { return skipped_steps_; }

  // Records one step: whether its (float32, reduced) gradients were all
  // finite. Returns whether the step's update should be applied (always when
  // disabled). Grows or backs the scale off as described above, within
  // [2^-24, 2^100]: below, 1/S heads for float32's overflow while no
  // float16 gradient is representable anyway; above, float32 itself
  // overflows soon.
  bool update(bool gradients_finite);

  // Resumes an enabled scaler where a checkpoint left it. Error(kBadState)
  // when disabled; Error(kInvalidArgument) unless scale is within the bounds
  // above, 0 <= growth_tracker < growth_interval and skipped_steps >= 0.
  void restore(double scale, int64_t growth_tracker, int64_t skipped_steps);

 private:
  bool enabled_ = false;
  LossScalerOptions options_;
  double scale_ = 1.0;
  int64_t growth_tracker_ = 0;
  int64_t skipped_steps_ = 0;
};

}  // namespace dt::nn
