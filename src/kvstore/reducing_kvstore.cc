#include "kvstore/reducing_kvstore.h"

#include "core/error.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

void ReducingKVStore::set_optimizer(const optim::OptimizerConfig&) {
  throw Error(ErrorCode::kNotSupported,
              "kvstore '" + type() +
                  "' all-reduces gradients and runs no optimizer: update the weights on the workers "
                  "(update_on_kvstore = 0, the trainer's default with this store), or use 'dist_sync' to update "
                  "on servers");
}

void ReducingKVStore::set_learning_rate(double) {
  throw Error(ErrorCode::kBadState, "set_learning_rate: the kvstore has no optimizer");
}

void ReducingKVStore::set_rescale_grad(double) {
  throw Error(ErrorCode::kBadState, "set_rescale_grad: the kvstore has no optimizer");
}

core::NamedArrays ReducingKVStore::optimizer_state(const std::string&) const { return {}; }

void ReducingKVStore::load_optimizer_state(const core::NamedArrays&, const std::string&) {
  throw Error(ErrorCode::kBadState, "load_optimizer_state: the kvstore has no optimizer");
}

}  // namespace dt::kvstore
