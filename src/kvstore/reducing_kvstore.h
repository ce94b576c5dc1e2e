// What the all-reduce stores ("dist_nccl", "allreduce") share: they only
// sum, and run no optimizer. set_optimizer says to update on the workers
// (the trainer's default with such a store), the optimizer's knobs are
// kBadState, and there is no optimizer state to save or load.
#pragma once

#include <string>

#include "kvstore/kvstore.h"

namespace dt::kvstore {

class ReducingKVStore : public KVStore {
 public:
  // Error(kNotSupported) naming type() and the way out.
  void set_optimizer(const optim::OptimizerConfig& config) override;
  bool has_optimizer() const override { return false; }
  bool accepts_optimizer() const override { return false; }
  void set_learning_rate(double lr) override;
  void set_rescale_grad(double rescale) override;
  core::NamedArrays optimizer_state(const std::string& prefix) const override;
  void load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) override;
};

}  // namespace dt::kvstore
