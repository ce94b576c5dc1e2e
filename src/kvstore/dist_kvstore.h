// The parameter-server kvstore types: "dist_sync" and "dist_async" (MXNet's
// KVStoreDist), and "dist_sync_device"/"dist_async_device", which are the
// same but merge a key's local values on a GPU (see WorkerMerge). This
// process is a worker of the job described by a JobConfig (the DMLC_*
// environment); keys live on the servers as placed by ps::KeyPlacement.
//  - Every request (init, push, pull, pushpull; a synchronous call is an
//    async request plus its wait) is cut into the parts of its keys and
//    handed to a RequestScheduler, which decides how and when the bytes
//    leave (per-server windows, priorities, fusion: see there).
//  - Values pushed under one key in one call are summed here first (copy the
//    first, add the rest: the local kvstore's order; on the host or, for the
//    "_device" types, on the merge GPU), so the servers see one gradient per
//    worker; pulled values are spread over a key's outputs here. dist_sync
//    servers sum those in worker-rank order, which makes a 2-worker push
//    exactly a local push([g0, g1]).
//  - dist_sync tracks a round per key, assigned when a request is issued; a
//    request on a key is queued only after the key's previous one finished,
//    so rounds reach the servers in order whatever the priorities.
//  - Every worker calls init; the servers keep rank 0's values.
//  - A worker that joined a running job (DT_WORKER_LOSS=continue) takes its
//    place in the servers' rounds when constructed (join_running_job); its
//    inits leave the servers' values as they are, its set_optimizer is not
//    sent (the servers' optimizer and state are the job's), and its rounds
//    start after rounds_before_joining().
//  - A lost node (ClusterMember's heartbeat news) fails pending and later
//    calls with Error(kPeerLost) naming it; so does a wait that sees no reply
//    for request_timeout_s (kTimedOut). After either, no reply touches the
//    caller's arrays any more.
//  - load_optimizer_state sends each part's optimizer state to the server
//    that owns it (the inverse of optimizer_state), so a checkpoint taken
//    with update_on_kvstore resumes exactly.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/context.h"
#include "kvstore/cluster_news.h"
#include "kvstore/elastic.h"
#include "kvstore/kvstore.h"
#include "kvstore/request_scheduler.h"
#include "kvstore/server_exchange.h"
#include "kvstore/worker_merge.h"
#include "ps/job/job_config.h"
#include "ps/key_placement.h"
#include "core/stall_watch.h"
#include "ps/roles/cluster_member.h"
#include "ps/roles/worker_client.h"

namespace dt::kvstore {

// The store is its own elastic facet (a private base): joining reads the
// member's node table and the rounds taken at construction, which a separate
// object would only forward to.
class DistKVStore final : public KVStore, private Elastic {
 public:
  // type: "dist_sync", "dist_async", "dist_sync_device" or
  // "dist_async_device". Joins the job (job.role must be worker): returns
  // once the node table arrived, Error(kTimedOut) after startup_timeout_s.
  // max_in_flight_per_server: see RequestScheduler. merge: null for the
  // host merge; the "_device" types need a WorkerMerge::on_device
  // (Error(kInvalidArgument) otherwise, before joining).
  DistKVStore(const std::string& type, const ps::JobConfig& job, const ps::PsOptions& options,
              ps::DataTransport transport = ps::DataTransport::kAuto, int max_in_flight_per_server = 0,
              std::unique_ptr<WorkerMerge> merge = nullptr);
  // Closes the request scheduler (queued requests fail with kClosed), then
  // says goodbye to the job's scheduler (bounded by shutdown_timeout_s); no
  // barrier.
  ~DistKVStore() override;

  std::string type() const override { return type_; }
  int rank() const override;
  int num_workers() const override;

  void init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values) override;
  void push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values, int priority) override;
  void pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs, int priority) override;
  void pushpull(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                const std::vector<core::NDArray>& outs, int priority) override;

  bool communicates_asynchronously() const override { return true; }
  std::shared_ptr<Completion> push_async(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                                         int priority) override;
  std::shared_ptr<Completion> pull_async(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs,
                                         int priority) override;
  std::shared_ptr<Completion> pushpull_async(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                                             const std::vector<core::NDArray>& outs, int priority) override;
  void wait(const std::shared_ptr<Completion>& request) override;
  void wait_all() override;

  void set_optimizer(const optim::OptimizerConfig& config) override;
  bool has_optimizer() const override;
  void set_learning_rate(double lr) override;
  void set_rescale_grad(double rescale) override;
  void barrier() override;
  Elastic* elastic() override { return this; }
  const Elastic* elastic() const override { return this; }
  // The data plane's bytes (requests to and replies from the servers).
  core::Traffic traffic() const override;
  void report_status(const core::WorkerStatus& numbers) override { member_->report_status(numbers); }
  // Tells the servers (who refuse a different one from another worker) and
  // compresses this worker's float32 pushes from now on. dist_sync servers
  // without an optimizer send each round's sum compressed too (with their
  // own residual), decoded here; weights (servers with an optimizer, inits)
  // and dist_async values are pulled in full. Error(kBadState) after this
  // store's first push.
  void set_gradient_compression(const std::string& spec) override;
  std::string gradient_compression() const override;
  core::NamedArrays optimizer_state(const std::string& prefix) const override;
  void load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) override;

  int max_in_flight_per_server() const { return scheduler_->window(); }
  // The job's members as the scheduler published them (servers' URLs).
  const ps::NodeTable& node_table() const { return member_->table(); }

 private:
  // Elastic (elastic.h). The servers hold the job's state: a joined worker
  // takes it from them, so the workers admit nobody and hand over nothing.
  bool joined_running_job() const override { return member_->table().joined_running_job; }
  int64_t rounds_before_joining() const override { return rounds_before_joining_; }
  bool goes_on_after_worker_loss() const override { return options_.worker_loss == ps::WorkerLossPolicy::kContinue; }
  bool admit_joining_workers() override { return false; }
  std::vector<uint8_t> hand_over_state(const std::vector<uint8_t>&) override { throw no_hand_over(type_); }

  struct KeyMeta {
    core::DType dtype;
    core::Shape shape;
    std::vector<ps::PartRange> parts;
    int64_t pushes = 0;      // dist_sync: the round of the latest push
    WorkerMerge::Buffers buffers;  // buffers.host: what is sent, where pulls land
    std::shared_ptr<Completion> last;  // the latest request on this key
  };
  // What a pull leaves to do once its replies arrived: fill a key's outputs.
  struct Spread {
    WorkerMerge::Buffers* buffers;
    std::vector<core::NDArray> outs;  // the key's outputs, in the order listed
  };

  KeyMeta& meta(Key key, const char* op);
  std::shared_ptr<Completion> issue(ps::wire::DataOp op, const std::vector<Key>& keys,
                                    const std::vector<core::NDArray>& values, const std::vector<core::NDArray>* outs,
                                    int priority);
  // Until the request finished; throws only the job's failure (a lost
  // peer) or kTimedOut when no reply came for request_timeout_s.
  void await(const std::shared_ptr<Completion>& request);
  // Bounded wait for one request; throws its error (which then counts as
  // reported) or the job's failure.
  void wait_request(const std::shared_ptr<Completion>& request);
  // Waits for every request issued so far; throws the first error.
  void wait_outstanding();
  // Throws the error of a failed request nobody waited for.
  void throw_unreported();
  // Throws a request's error, or the lost peer behind it when heartbeats
  // name one within 2 x heartbeat_timeout_s of a dropped connection.
  [[noreturn]] void report(const core::Error& error);
  void broadcast_command(ps::wire::DataOp op, const std::string& text, double number);

  const std::string type_;
  const bool sync_;
  const std::unique_ptr<WorkerMerge> merge_;
  const ps::PsOptions options_;
  const std::shared_ptr<core::Context> cpu_;
  // Declared before the connections it sends over, so it outlives them:
  // closing them runs the reply handlers that still use it.
  std::unique_ptr<RequestScheduler> scheduler_;
  std::unique_ptr<ps::ClusterMember> member_;
  std::unique_ptr<ps::WorkerClient> client_;
  std::unique_ptr<ClusterNews> news_;       // what the heartbeats' news does to the data path
  std::unique_ptr<ServerExchange> servers_;  // requests to every server, past replicated losses
  ps::KeyPlacement placement_;
  mutable std::mutex mutex_;  // one call at a time: rounds and staging are per key
  std::map<Key, KeyMeta> keys_;
  int64_t rounds_before_joining_ = 0;  // set once, before any init
  bool has_optimizer_ = false;
  // What this worker set with set_learning_rate / set_rescale_grad. Worker 0
  // of a dist_sync job sends them with each push, for the round it pushes
  // (optim/update_numbers.h): a replica that a setting command reaches
  // before that round's last push then applies the round as its other holder
  // did.
  optim::UpdateNumbers numbers_;
  bool pushed_ = false;  // compression is fixed from the first push on
  std::string compression_ = "none";  // canonical text
  // The stall inspector over the scheduler's messages in flight, naming the
  // workers the servers' rounds wait for (ClusterMember::stalled_workers).
  std::unique_ptr<core::StallWatch> stall_watch_;
};

}  // namespace dt::kvstore
