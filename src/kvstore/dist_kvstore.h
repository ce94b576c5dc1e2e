// The parameter-server kvstore types: "dist_sync" and "dist_async" (MXNet's
// KVStoreDist). This process is a worker of the job described by a JobConfig
// (the DMLC_* environment); keys live on the servers as placed by
// ps::KeyPlacement.
//  - Every call sends at most one message per server per ~4 MiB of tensor
//    data (small keys fused, big ones split across servers and into parts),
//    all in flight at once, and waits for all replies within
//    request_timeout_s.
//  - Values pushed under one key in one call are summed here first (copy the
//    first, add the rest: the local kvstore's order), so the servers see one
//    gradient per worker; dist_sync servers sum those in worker-rank order,
//    which makes a 2-worker push exactly a local push([g0, g1]).
//  - dist_sync tracks a round per key: a pull returns the value of this
//    worker's latest pushed round (waiting for the other workers' pushes).
//  - Every worker calls init; the servers keep rank 0's values.
//  - priority is accepted and ignored: every request of a call is in flight
//    at once, so there is nothing to reorder.
//  - A lost node (ClusterMember's heartbeat news) fails pending and later
//    calls with Error(kPeerLost) naming it.
//  - load_optimizer_state is Error(kNotSupported): resuming a checkpoint
//    with update_on_kvstore would need the servers to take state back.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "core/context.h"
#include "kvstore/kvstore.h"
#include "ps/cluster_member.h"
#include "ps/job_config.h"
#include "ps/key_placement.h"
#include "ps/worker_client.h"

namespace dt::kvstore {

class DistKVStore final : public KVStore {
 public:
  // type: "dist_sync" or "dist_async". Joins the job (job.role must be
  // worker): returns once the node table arrived, Error(kTimedOut) after
  // startup_timeout_s.
  DistKVStore(const std::string& type, const ps::JobConfig& job, const ps::PsOptions& options,
              ps::DataTransport transport = ps::DataTransport::kAuto);
  // Says goodbye to the scheduler (bounded by shutdown_timeout_s); no barrier.
  ~DistKVStore() override;

  std::string type() const override { return sync_ ? "dist_sync" : "dist_async"; }
  int rank() const override;
  int num_workers() const override;

  void init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values) override;
  void push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values, int priority) override;
  void pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs, int priority) override;
  void pushpull(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                const std::vector<core::NDArray>& outs, int priority) override;
  void set_optimizer(const optim::OptimizerConfig& config) override;
  bool has_optimizer() const override;
  void set_learning_rate(double lr) override;
  void set_rescale_grad(double rescale) override;
  void barrier() override;
  core::NamedArrays optimizer_state(const std::string& prefix) const override;
  void load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) override;

 private:
  struct KeyMeta {
    core::DType dtype;
    core::Shape shape;
    std::vector<ps::PartRange> parts;
    int64_t pushes = 0;      // dist_sync: the round of the latest push
    core::NDArray staging;   // host buffer: a local sum, or a device value's copy
  };
  // One part of one key moving in a call.
  struct Item {
    const KeyMeta* meta;
    Key key;
    ps::PartRange part;
    int64_t round;
    const uint8_t* src;  // the key's full host data to push, or null
    uint8_t* dst;        // where the key's full host data is pulled to, or null
  };

  KeyMeta& meta(Key key, const char* op);
  void check_value(Key key, const KeyMeta& m, const core::NDArray& value, const char* op) const;
  // The host bytes to push for a key group (summing several values).
  const uint8_t* push_source(KeyMeta& m, const std::vector<core::NDArray>& values, const std::vector<size_t>& positions);
  void run(ps::wire::DataOp op, const std::vector<Item>& items, const std::string& text = {});
  void broadcast_command(ps::wire::DataOp op, const std::string& text, double number) const;
  void send_values(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                   const std::vector<core::NDArray>* outs, ps::wire::DataOp op);

  const bool sync_;
  const ps::PsOptions options_;
  const std::shared_ptr<core::Context> cpu_;
  std::unique_ptr<ps::ClusterMember> member_;
  std::unique_ptr<ps::WorkerClient> client_;
  ps::KeyPlacement placement_;
  mutable std::mutex mutex_;  // one call at a time: rounds and staging are per key
  std::map<Key, KeyMeta> keys_;
  bool has_optimizer_ = false;
};

}  // namespace dt::kvstore
