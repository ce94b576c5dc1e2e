#include "ps/server/round_rules.h"

#include <string>
#include <utility>

#include "core/error.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

void RoundRules::set_mode(StoreMode mode) {
  int expected = -1;
  if (mode_.compare_exchange_strong(expected, static_cast<int>(mode)) || expected == static_cast<int>(mode)) return;
  throw Error(ErrorCode::kBadState, std::string("workers disagree on the kvstore type: this server runs ") +
                                        (expected == static_cast<int>(StoreMode::kSync) ? "dist_sync" : "dist_async") +
                                        ", a worker asked for " +
                                        (mode == StoreMode::kSync ? "dist_sync" : "dist_async"));
}

StoreMode RoundRules::mode() const {
  const int mode = mode_.load();
  if (mode < 0) throw Error(ErrorCode::kBadState, "no worker has declared dist_sync or dist_async yet");
  return static_cast<StoreMode>(mode);
}

bool RoundRules::set_optimizer(const optim::OptimizerConfig& config) {
  auto created = optim::Optimizer::create(config);
  std::lock_guard<std::mutex> lock(mutex_);
  if (optimizer_ && optimizer_->config() == config) return false;
  optimizer_ = std::move(created);
  return true;
}

std::shared_ptr<optim::Optimizer> RoundRules::optimizer() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return optimizer_;
}

void RoundRules::set_compression(const compression::CompressionConfig& config) {
  std::shared_ptr<const compression::GradientCodec> codec;
  if (compression::is_lossy(config.mode)) codec = std::make_shared<const compression::GradientCodec>(config);
  std::lock_guard<std::mutex> lock(mutex_);
  codec_ = std::move(codec);
}

std::shared_ptr<const compression::GradientCodec> RoundRules::codec() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return codec_;
}

}  // namespace dt::ps
