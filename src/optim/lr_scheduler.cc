#include "optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>

namespace dt::optim {

namespace {
constexpr double kPi = 3.14159265358979323846;
}  // namespace

LrScheduler::LrScheduler(const OptimizerConfig& config) {
  const std::string kind = config.get_string("lr_scheduler", "none");
  if (kind == "factor") kind_ = Kind::kFactor;
  else if (kind == "multifactor") kind_ = Kind::kMultiFactor;
  else if (kind == "cosine") kind_ = Kind::kCosine;
  else if (kind == "poly") kind_ = Kind::kPoly;
  warmup_steps_ = config.get_int("warmup_steps", warmup_steps_);
  warmup_begin_lr_ = config.get_number("warmup_begin_lr", warmup_begin_lr_);
  step_ = config.get_int("step", step_);
  factor_ = config.get_number("factor", factor_);
  stop_factor_lr_ = config.get_number("stop_factor_lr", stop_factor_lr_);
  steps_ = config.get_int_list("steps", steps_);
  max_update_ = config.get_int("max_update", max_update_);
  final_lr_ = config.get_number("final_lr", final_lr_);
  power_ = config.get_number("power", power_);
}

double LrScheduler::rate(int64_t num_update, double base_lr) const {
  if (num_update < warmup_steps_) {
    return warmup_begin_lr_ +
           (base_lr - warmup_begin_lr_) * static_cast<double>(num_update) / static_cast<double>(warmup_steps_);
  }
  switch (kind_) {
    case Kind::kNone:
      return base_lr;
    case Kind::kFactor: {
      // MXNet decays once each time num_update passes count + step, counting
      // from 0 (warm-up included), and clamps at stop_factor_lr on each decay.
      const int64_t decays = num_update < 1 ? 0 : (num_update - 1) / step_;
      if (decays == 0) return base_lr;
      return std::max(base_lr * std::pow(factor_, static_cast<double>(decays)), stop_factor_lr_);
    }
    case Kind::kMultiFactor: {
      const auto passed = std::lower_bound(steps_.begin(), steps_.end(), num_update) - steps_.begin();
      return base_lr * std::pow(factor_, static_cast<double>(passed));
    }
    case Kind::kCosine:
    case Kind::kPoly: {
      if (num_update > max_update_) return final_lr_;
      const double progress =
          static_cast<double>(num_update - warmup_steps_) / static_cast<double>(max_update_ - warmup_steps_);
      const double shape = kind_ == Kind::kCosine ? (1.0 + std::cos(kPi * progress)) / 2.0
                                                  : std::pow(1.0 - progress, power_);
      return final_lr_ + (base_lr - final_lr_) * shape;
    }
  }
  return base_lr;
}

}  // namespace dt::optim
