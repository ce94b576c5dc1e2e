// What the workers of a job must agree on at a server, and who decides:
//  - the optimizer: every worker sends SetOptimizer, as every worker calls
//    set_optimizer; worker 0's is the one applied, another worker's is
//    answered once worker 0's has arrived: OK when it is the same,
//    kInvalidArgument naming both when not;
//  - the gradient compression: the first worker's config is the job's; the
//    same again is a no-op, another (or any change after the first push)
//    an error naming both;
//  - the optimizer's learning rate and rescale, which worker 0 owns: once
//    it set them here, a new copy's source does not override them.
//
// Threading: any thread; one lock, never held while calling the store or
// a reply.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/error.h"
#include "optim/optimizer_config.h"
#include "ps/compression/gradient_codec.h"
#include "ps/server/key_store.h"
#include "ps/transport/rate_limited_log.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

class JobAgreement {
 public:
  explicit JobAgreement(ServerKeyStore& store, RateLimitedLog& log) : store_(store), log_(log) {}

  // worker's SetOptimizer; reply is called once (maybe later, see above).
  void set_optimizer(int worker, const optim::OptimizerConfig& config, const RequestServer::Reply& reply);
  // Applies config as worker 0's (a rejoined server taking the job's settings).
  void adopt_optimizer(const optim::OptimizerConfig& config);
  // The first worker's config is the job's; the same again is a no-op, the
  // same with the gradient scale a trainer names (before the first push) is
  // adopted (CompressionConfig::agree), another (or any change after the
  // first push) an error naming both.
  void set_compression(int worker, const compression::CompressionConfig& config);
  // Marks that pushes began (compression is fixed from now on) and returns
  // the job's codec, null without compression. Never destroyed before the
  // agreement, so a push may hold it without the lock.
  const compression::GradientCodec* pushing();
  // Worker 0 set the learning rate or the rescale here.
  void learning_rate_set();
  void rescale_grad_set();
  // The learning rate and gradient rescale of the server a new copy was
  // filled from: taken unless worker 0 set them here since this server
  // started (then they are newer than the source's were when it answered).
  void take_source_optimizer_numbers(double learning_rate, double rescale_grad);
  // Answers the SetOptimizer requests still waiting with error.
  void fail(const core::Error& error);

  // The job's settings as agreed so far (unset: nullopt).
  std::optional<optim::OptimizerConfig> optimizer() const;
  std::optional<compression::CompressionConfig> compression() const;

 private:
  void adopt_compression(const compression::CompressionConfig& config);  // mutex_ held
  ServerKeyStore& store_;
  RateLimitedLog& log_;

  mutable std::mutex mutex_;  // guards what follows
  std::optional<optim::OptimizerConfig> optimizer_;            // worker 0's
  std::optional<compression::CompressionConfig> compression_;  // the first worker's
  std::unique_ptr<compression::GradientCodec> codec_;          // its codec (none: null), fixed from the first push
  bool pushed_ = false;
  bool learning_rate_set_ = false;
  bool rescale_grad_set_ = false;
  // Other workers' SetOptimizer waiting for worker 0's (one per worker).
  struct OptimizerCheck {
    optim::OptimizerConfig config;
    RequestServer::Reply reply;
  };
  std::map<int, OptimizerCheck> optimizer_checks_;
};

}  // namespace dt::ps
