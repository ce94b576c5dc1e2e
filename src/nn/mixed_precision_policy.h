// MixedPrecisionPolicy: the one place that decides how a net trains in
// reduced precision, used by the net (what it computes in, how it scales its
// loss) and by the trainer (where the update runs, whether a step applies
// it). PyTorch's AMP defaults:
//  - compute dtype: float32, or float16 / bfloat16 on GPU contexts only;
//  - loss scaling: dynamic (LossScaler, init 2^16) for float16, whose narrow
//    range lets small gradients underflow; off for bfloat16 (float32's
//    range) and float32. It may be replaced, but not enabled on float32;
//  - skip on overflow: with loss scaling, a step whose reduced gradients
//    hold an inf or NaN applies no update and the scale backs off;
//  - update side: skipping needs the update on the workers, since a store
//    that runs the optimizer applies the gradients before the workers could
//    agree to skip them. A store update chosen by default (update_on_kvstore
//    = -1) moves to the workers while it still can; an explicit one is
//    Error(kNotSupported).
#pragma once

#include <functional>

#include "core/context.h"
#include "core/dtype.h"
#include "nn/loss_scaler.h"

namespace dt::nn {

class MixedPrecisionPolicy {
 public:
  // Error(kInvalidArgument) for a dtype other than float32, float16 and
  // bfloat16. Separate from the next check so that a net can say
  // kBadState (too late to change) between the two.
  static void check_compute_dtype(core::DType dtype);
  // Error(kNotSupported) for float16 / bfloat16 on a CPU context.
  static void check_supported_on(core::DType dtype, const core::Context& ctx);

  core::DType compute_dtype() const { return compute_dtype_; }
  // Whether layers compute in a dtype other than the float32 masters.
  bool mixed() const { return compute_dtype_ != core::DType::kFloat32; }
  // Takes a dtype both checks accepted, and resets the loss scaler
  // to the dtype's default (see above).
  void set_compute_dtype(core::DType dtype);

  LossScaler& loss_scaler() { return loss_scaler_; }
  const LossScaler& loss_scaler() const { return loss_scaler_; }
  // Error(kInvalidArgument) to enable scaling while computing in float32.
  void set_loss_scaler(const LossScaler& scaler);

  // Records one step in the loss scaler and says whether its update is
  // applied: always without loss scaling (gradients_finite is then not
  // called, it may wait for a device), else when the reduced gradients are
  // finite.
  bool apply_update(const std::function<bool()>& gradients_finite);

  // Whether the update may run on the store, for a trainer that wants it
  // there (update_on_store): false when loss scaling moves it to the workers
  // (chosen_by_default, and the store not yet initialised);
  // Error(kNotSupported) when it cannot move.
  bool update_on_store_allowed(bool update_on_store, bool chosen_by_default, bool store_initialized) const;

 private:
  core::DType compute_dtype_ = core::DType::kFloat32;
  LossScaler loss_scaler_;
};

}  // namespace dt::nn
