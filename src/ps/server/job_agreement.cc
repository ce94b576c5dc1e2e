#include "ps/server/job_agreement.h"

#include <utility>

#include "ps/transport/data_codec.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

const compression::GradientCodec* JobAgreement::pushing() {
  std::lock_guard<std::mutex> lock(mutex_);
  pushed_ = true;
  return codec_.get();
}

void JobAgreement::set_compression(int worker, const compression::CompressionConfig& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  const compression::CompressionConfig current = compression_.value_or(compression::CompressionConfig());
  // A worker's trainer names the gradient scale after its program set the spec.
  const auto agreed = compression::CompressionConfig::agree(current, config);
  if (compression_ || pushed_) {
    if (agreed == current) return;
    if (agreed && !pushed_) return adopt_compression(*agreed);
    throw Error(pushed_ ? ErrorCode::kBadState : ErrorCode::kInvalidArgument,
                "worker " + std::to_string(worker) + " set the gradient compression " + config.to_string() +
                    ", the job's is " + current.to_string() +
                    (pushed_ ? " (rule: set before the first push)" : " (rule: every worker sets the same compression)"));
  }
  adopt_compression(config);
}

void JobAgreement::adopt_compression(const compression::CompressionConfig& config) {
  store_.set_compression(config);
  compression_ = config;
  codec_ = config.mode == compression::CompressionMode::kNone ? nullptr
                                                               : std::make_unique<compression::GradientCodec>(config);
}

void JobAgreement::set_optimizer(int worker, const optim::OptimizerConfig& config, const RequestServer::Reply& reply) {
  const auto differ = [](int w, const optim::OptimizerConfig& mine, const optim::OptimizerConfig& rank0) {
    return encode_data_error(ErrorCode::kInvalidArgument,
                             "worker " + std::to_string(w) + " set the optimizer " + mine.to_json() +
                                 ", worker 0 set " + rank0.to_json() +
                                 " (rule: every worker sets the same optimizer; worker 0's is applied)");
  };
  if (worker != 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (optimizer_ && *optimizer_ == config) {
      reply(encode_data_reply({}).message);
      return;
    }
    // Worker 0's may still be on its way (or change the optimizer to this
    // one): answer when it arrives. A newer request from the same worker
    // replaces the older, which is refused.
    auto [it, fresh] = optimizer_checks_.try_emplace(worker, OptimizerCheck{config, reply});
    if (!fresh) {
      it->second.reply(encode_data_error(ErrorCode::kBadState, "superseded by a later SetOptimizer from worker " +
                                                                   std::to_string(worker)));
      it->second = OptimizerCheck{config, reply};
    }
    return;
  }
  store_.set_optimizer(config);
  std::map<int, OptimizerCheck> checks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    optimizer_ = config;
    checks.swap(optimizer_checks_);
  }
  for (auto& [w, check] : checks) {
    if (check.config == config) {
      check.reply(encode_data_reply({}).message);
    } else {
      log_.print("refused worker " + std::to_string(w) + "'s optimizer: it differs from worker 0's");
      check.reply(differ(w, check.config, config));
    }
  }
  reply(encode_data_reply({}).message);
}

void JobAgreement::adopt_optimizer(const optim::OptimizerConfig& config) {
  store_.set_optimizer(config);
  std::lock_guard<std::mutex> lock(mutex_);
  optimizer_ = config;
}

void JobAgreement::learning_rate_set() {
  std::lock_guard<std::mutex> lock(mutex_);
  learning_rate_set_ = true;
}

void JobAgreement::rescale_grad_set() {
  std::lock_guard<std::mutex> lock(mutex_);
  rescale_grad_set_ = true;
}

void JobAgreement::take_source_optimizer_numbers(double learning_rate, double rescale_grad) {
  if (!store_.has_optimizer()) return;
  bool take_rate = false;
  bool take_rescale = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    take_rate = !learning_rate_set_;
    take_rescale = !rescale_grad_set_;
  }
  if (take_rate) store_.set_learning_rate(learning_rate);
  if (take_rescale) store_.set_rescale_grad(rescale_grad);
}

void JobAgreement::fail(const Error& error) {
  std::map<int, OptimizerCheck> checks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    checks.swap(optimizer_checks_);
  }
  for (auto& [worker, check] : checks) check.reply(encode_data_error(error.code(), error.what()));
}

std::optional<optim::OptimizerConfig> JobAgreement::optimizer() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return optimizer_;
}

std::optional<compression::CompressionConfig> JobAgreement::compression() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return compression_;
}

}  // namespace dt::ps
