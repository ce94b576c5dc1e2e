// The key-value store that trainers synchronise parameters through, with
// MXNet's KVStore semantics:
//  - init(keys, values) stores the initial value of each key (once).
//  - push(keys, values): values pushed under one key in one call (e.g. one
//    per device) are summed; with an optimizer set, the sum is a gradient and
//    the store applies the update to its weight; without one, the sum
//    replaces the stored value.
//  - pull(keys, outs) copies the stored value of each key into every out
//    listed under it (a broadcast to the devices).
//  - pushpull = push then pull; broadcast = init then pull.
//  - push_async/pull_async/pushpull_async queue the same requests and return
//    at once with a Completion; a larger priority is sent first (MXNet's
//    convention; trainers pass -parameter_index). The arrays must stay alive
//    and unchanged until the request is waited for. Requests on one key run
//    in the order they were issued. wait/wait_all are bounded and throw the
//    request's error; an error nobody waited for is thrown by the next call.
//    Stores without a communication thread (communicates_asynchronously()
//    false) complete each request before returning and throw at once.
// Keys are integers; the C API maps string keys onto them. The types and how
// to make one: kvstore_factory.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "kvstore/completion.h"
#include "kvstore/elastic.h"
#include "core/safetensors.h"
#include "core/status_line.h"
#include "core/traffic.h"
#include "optim/optimizer_config.h"

namespace dt::kvstore {

using Key = uint64_t;

class KVStore {
 public:
  virtual ~KVStore() = default;
  KVStore(const KVStore&) = delete;
  KVStore& operator=(const KVStore&) = delete;

  virtual std::string type() const = 0;
  virtual int rank() const { return 0; }
  virtual int num_workers() const { return 1; }

  // keys and values have equal lengths (Error(kInvalidArgument) otherwise).
  // A key initialised twice is Error(kBadState).
  virtual void init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values) = 0;
  // Each value must have its key's initial shape and dtype
  // (Error(kShapeMismatch)/kDtypeMismatch); an unknown key is Error(kNotFound).
  virtual void push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values, int priority) = 0;
  virtual void pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs, int priority) = 0;
  virtual void pushpull(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                        const std::vector<core::NDArray>& outs, int priority);
  virtual void broadcast(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                         const std::vector<core::NDArray>& outs);

  // Whether the async calls below overlap the caller's work (a trainer only
  // issues requests during backward when they do).
  virtual bool communicates_asynchronously() const { return false; }
  virtual std::shared_ptr<Completion> push_async(const std::vector<Key>& keys,
                                                 const std::vector<core::NDArray>& values, int priority);
  virtual std::shared_ptr<Completion> pull_async(const std::vector<Key>& keys,
                                                 const std::vector<core::NDArray>& outs, int priority);
  virtual std::shared_ptr<Completion> pushpull_async(const std::vector<Key>& keys,
                                                     const std::vector<core::NDArray>& values,
                                                     const std::vector<core::NDArray>& outs, int priority);
  // Until the request finished: throws its error; Error(kTimedOut) when the
  // store's request deadline passes without progress.
  virtual void wait(const std::shared_ptr<Completion>& request);
  // Until every request issued so far finished; throws the first error.
  virtual void wait_all() {}

  // From now on pushes are gradients that the store applies with this
  // optimizer (update_on_kvstore).
  virtual void set_optimizer(const optim::OptimizerConfig& config) = 0;
  virtual bool has_optimizer() const = 0;
  // Whether set_optimizer can work: false for stores that only reduce
  // (dist_nccl), with which trainers update on the workers.
  virtual bool accepts_optimizer() const { return true; }
  // Changes the learning rate of the store's optimizer (Error(kBadState) without one).
  virtual void set_learning_rate(double lr) = 0;
  // The factor the store's optimizer multiplies pushed gradients by (the
  // trainer's 1/batch_size); Error(kBadState) without an optimizer.
  virtual void set_rescale_grad(double rescale) = 0;
  // Waits until every worker reaches the barrier; a no-op with one worker.
  virtual void barrier() {}
  // The store's elastic facet (elastic.h): worker loss survived, workers
  // joining the running job; null for stores that offer neither.
  virtual Elastic* elastic() { return nullptr; }
  virtual const Elastic* elastic() const { return nullptr; }
  // Bytes this process's store sent and received over the network since it
  // was made (zero for the in-process stores).
  virtual core::Traffic traffic() const { return {}; }
  // dtrun's live summary relayed through the scheduler (DT_STATUS_EVERY_S
  // without DT_STATUS_FILE: the trainer runs on another host than dtrun):
  // the trainer's latest numbers, sent with the store's next heartbeat.
  // Stores without a scheduler drop them. Any thread.
  virtual void report_status(const core::WorkerStatus& /*numbers*/) {}
  // MXNet's set_gradient_compression: what pushes send is compressed from
  // now on (spec: ps/compression/compression_mode.h's grammar, e.g.
  // "2bit:threshold=0.5"). Before the first push; the same on every worker.
  // Error(kNotSupported) for the stores that do not compress.
  virtual void set_gradient_compression(const std::string& spec);
  // What set_gradient_compression set, as the canonical text of
  // compression_mode.h ("none" until then, and for the stores that do not
  // compress), so that a trainer can tell a compression it did not choose.
  virtual std::string gradient_compression() const { return "none"; }
  // The trainer's word to the compression, on every worker before its first
  // push: its pushes are batch sums the optimizer rescales by rescale_grad
  // (1 / batch size). A compression whose mode takes a threshold and whose
  // spec named no gradient_scale is set again with the scale of batch sums
  // (CompressionConfig::batch_sum_gradient_scale), so that its threshold
  // means the same at every batch size; otherwise nothing changes.
  // Error(kInvalidArgument) for a rescale_grad that is not positive and finite.
  void set_compression_rescale_grad(double rescale_grad);

  // The store's optimizer state (momenta, moments, step counts) for
  // checkpoints, names starting with prefix; empty without an optimizer.
  virtual core::NamedArrays optimizer_state(const std::string& prefix) const = 0;
  virtual void load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) = 0;

 protected:
  KVStore() = default;
};

// Keys in first-appearance order, each with the positions it occupies in a
// keys list: the grouping that push (sum) and pull (broadcast) apply.
struct KeyGroup {
  Key key;
  std::vector<size_t> positions;
};
std::vector<KeyGroup> group_keys(const std::vector<Key>& keys);

}  // namespace dt::kvstore
