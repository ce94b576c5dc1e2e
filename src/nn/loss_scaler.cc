#include "nn/loss_scaler.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace dt::nn {

using core::Error;
using core::ErrorCode;

namespace {

// The largest scale kept: float32 itself overflows not far above, and a
// loss gradient this large overflows float16 on every step anyway.
constexpr double kMaxScale = 0x1.0p100;
// The smallest: float16's smallest subnormal; see update().
constexpr double kMinScale = 0x1.0p-24;

}  // namespace

LossScaler::LossScaler(const LossScalerOptions& options) : enabled_(true), options_(options) {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw Error(ErrorCode::kInvalidArgument, "loss scaler: " + what);
  };
  require(std::isfinite(options.init_scale) && options.init_scale >= kMinScale && options.init_scale <= kMaxScale,
          "init_scale must be in [2^-24, 2^100], got " + std::to_string(options.init_scale));
  require(std::isfinite(options.growth_factor) && options.growth_factor > 1.0,
          "growth_factor must be > 1, got " + std::to_string(options.growth_factor));
  require(options.backoff_factor > 0.0 && options.backoff_factor < 1.0,
          "backoff_factor must be in (0, 1), got " + std::to_string(options.backoff_factor));
  require(options.growth_interval >= 1,
          "growth_interval must be >= 1, got " + std::to_string(options.growth_interval));
  scale_ = options.init_scale;
}

bool LossScaler::update(bool gradients_finite) {
  if (!enabled_) return true;
  if (!gradients_finite) {
    scale_ = std::fmax(scale_ * options_.backoff_factor, kMinScale);
    growth_tracker_ = 0;
    ++skipped_steps_;
    return false;
  }
  if (++growth_tracker_ == options_.growth_interval) {
    scale_ = std::fmin(scale_ * options_.growth_factor, kMaxScale);
    growth_tracker_ = 0;
  }
  return true;
}

void LossScaler::restore(double scale, int64_t growth_tracker, int64_t skipped_steps) {
  if (!enabled_) throw Error(ErrorCode::kBadState, "loss scaler: restore on a disabled scaler");
  if (!(std::isfinite(scale) && scale >= kMinScale && scale <= kMaxScale)) {
    throw Error(ErrorCode::kInvalidArgument, "loss scaler: scale must be in [2^-24, 2^100], got " + std::to_string(scale));
  }
  if (growth_tracker < 0 || growth_tracker >= options_.growth_interval) {
    throw Error(ErrorCode::kInvalidArgument, "loss scaler: growth tracker " + std::to_string(growth_tracker) +
                                                 " outside [0, " + std::to_string(options_.growth_interval) + ")");
  }
  if (skipped_steps < 0) {
    throw Error(ErrorCode::kInvalidArgument, "loss scaler: skipped steps " + std::to_string(skipped_steps) + " < 0");
  }
  scale_ = scale;
  growth_tracker_ = growth_tracker;
  skipped_steps_ = skipped_steps;
}

}  // namespace dt::nn
