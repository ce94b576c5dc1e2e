// The numbers of one optimizer update that a program changes while it
// trains: the base learning rate (before any schedule) and the gradient
// rescale (the trainer sets 1/batch_size). An unset field means "the
// optimizer's own, as last set".
//
// Why a value of its own: a dist_sync server applies each round with the
// numbers worker 0 pushed that round with (TensorSlice.learning_rate /
// rescale_grad), not with whatever a setting command left behind when the
// round completes. Two servers holding copies of a part then apply every
// round alike, however late a push reaches one of them, and a new copy
// replaying its kept rounds applies each as the source did.
#pragma once

#include <optional>

namespace dt::optim {

struct UpdateNumbers {
  std::optional<double> learning_rate;
  std::optional<double> rescale_grad;

  bool empty() const { return !learning_rate && !rescale_grad; }
};

}  // namespace dt::optim
