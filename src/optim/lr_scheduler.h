// Learning-rate schedules with MXNet's lr_scheduler semantics: the rate is a
// function of num_update, the optimizer's update count (1 for the first
// update), and of the base rate. Unlike MXNet's stateful Python objects the
// schedule is a pure function, so a resumed run (or a server that receives
// the config) computes the same rate from the count alone.
#pragma once

#include <cstdint>
#include <vector>

#include "optim/optimizer_config.h"

namespace dt::optim {

class LrScheduler {
 public:
  // The "lr_scheduler" of a validated config and its keys:
  //   none:        base_lr
  //   factor:      base_lr * factor^floor((n-1)/step), never below stop_factor_lr
  //                once it has decayed (MXNet FactorScheduler; factor 1, stop 1e-8 by default)
  //   multifactor: base_lr * factor^(number of steps s with n > s) (MXNet MultiFactorScheduler)
  //   cosine:      final_lr + (base_lr - final_lr) * (1 + cos(pi * (n - warmup) / (max_update - warmup))) / 2,
  //                final_lr after max_update (MXNet CosineScheduler; final_lr 0 by default)
  //   poly:        final_lr + (base_lr - final_lr) * (1 - (n - warmup) / (max_update - warmup))^power,
  //                final_lr after max_update (MXNet PolyScheduler; power 2, final_lr 0 by default)
  // Every kind takes a linear warm-up: for n < warmup_steps the rate is
  // warmup_begin_lr + (base_lr - warmup_begin_lr) * n / warmup_steps.
  explicit LrScheduler(const OptimizerConfig& config);

  // The rate for update number num_update (0 before the first update).
  double rate(int64_t num_update, double base_lr) const;

 private:
  enum class Kind { kNone, kFactor, kMultiFactor, kCosine, kPoly };

  Kind kind_ = Kind::kNone;
  int64_t warmup_steps_ = 0;
  double warmup_begin_lr_ = 0.0;
  int64_t step_ = 1;
  double factor_ = 1.0;
  double stop_factor_lr_ = 1e-8;
  std::vector<int64_t> steps_;
  int64_t max_update_ = 1;
  double final_lr_ = 0.0;
  double power_ = 2.0;
};

}  // namespace dt::optim
