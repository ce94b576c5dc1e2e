// The "allreduce" kvstore: data-parallel all-reduce across the worker
// processes of a disttrain job, in host memory, without parameter servers
// (dtrun -n N -s 0): SINGA's DistOpt, Horovod and PyTorch DDP's shape on
// CPUs. The job's scheduler introduces the workers (their listening
// addresses travel through ps::ClusterMember::allgather), runs barriers and
// heartbeats; the gradients go worker to worker over
// collective::host::HostCommunicator (ring or recursive doubling by size,
// ipc:// between workers of one host).
//  - init(keys, values): every worker's store starts from worker 0's values
//    (a broadcast), so all replicas begin equal.
//  - push: the values listed under a key are summed on this worker
//    (KeyReducer, in the order listed), then all-reduced (sum) across the
//    workers; the result replaces the key's stored value. Results are
//    bit-identical on every worker.
//  - pull copies the stored value (the last all-reduced sum, or the initial
//    value) to the outputs listed under the key.
//  - Buckets, as DDP's: keys pushed one after another are fused into one
//    buffer and all-reduced together once it holds bucket_bytes (one
//    latency instead of one per key; fused_all_reduce.h). Buckets follow the order of pushes
//    alone, never timing, so every worker cuts the same ones.
//  - pushpull_async (what the trainer issues as backward finishes each
//    layer) returns at once; a communication thread all-reduces each bucket
//    as soon as it is full, overlapping the rest of backward. wait_all()
//    sends the last, partial bucket and waits. The synchronous calls first
//    finish what is in flight.
//  - The store runs no optimizer (set_optimizer is Error(kNotSupported)):
//    workers update their own weights with the summed gradients; the trainer
//    does so with this store by default.
//  - Every worker must push the same keys, in calls made in the same order
//    (collectives match by order; the trainer pushes in the net's backward
//    order); within one call the order of the keys does not matter (they
//    are bucketed in key order). A bucket that differs across workers
//    (other keys, or other sizes) is Error(kProtocol) naming the keys and
//    the worker; a worker that never
//    comes is Error(kTimedOut) after request_timeout_s; a worker that dies
//    is Error(kPeerLost) naming it, from its broken connection or from the
//    scheduler's heartbeats, whichever is first. The store is unusable after
//    a failure: every later call throws the first error.
//  - DT_WORKER_LOSS=continue: a worker the scheduler lets the job go on
//    without is not a failure. The workers that remain regroup their ring
//    over themselves and settle the bucket the loss interrupted, alike on
//    every one of them (survivor_group.h); training goes on. rank() and
//    num_workers() stay the job's.
//  - Under continue, a worker started again in a departed one's place
//    (dtrun --max-restarts) joins: the workers in the job let it in at the
//    next admit_joining_workers() they all call, and hand it their state
//    (elastic.h). The trainer does both before each batch.
//  - Arrays on a GPU work too (summed through host memory); dist_nccl is the
//    GPU-native all-reduce store.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collective/host/host_communicator.h"
#include "collective/host/link_watch.h"
#include "core/context.h"
#include "core/stall_watch.h"
#include "core/error.h"
#include "kvstore/completion.h"
#include "kvstore/elastic.h"
#include "kvstore/host/fused_all_reduce.h"
#include "kvstore/host/survivor_group.h"
#include "kvstore/key_reducer.h"
#include "kvstore/kvstore.h"
#include "kvstore/reducing_kvstore.h"
#include "ps/job/job_config.h"
#include "ps/roles/cluster_member.h"

namespace dt::kvstore {

struct HostAllreduceOptions {
  // A bucket is all-reduced once the keys pushed into it hold this many
  // bytes; a key at least this large travels alone, in place.
  // DT_ALLREDUCE_BUCKET_BYTES sets it through create_kvstore.
  size_t bucket_bytes = kDefaultBucketBytes;
  static constexpr size_t kDefaultBucketBytes = 4 << 20;
  // Large all-reduces take the hierarchical shape where the workers' hosts
  // allow it (collective/host/host_communicator.h);
  // DT_HIERARCHICAL_ALLREDUCE=0 sets it false through create_kvstore.
  bool hierarchical = true;
};

// The store is its own elastic facet (a private base): admitting and
// handing over are collectives on its communication thread, under its lock,
// over its survivor group, which a separate object would only forward to.
class HostAllreduceKVStore final : public ReducingKVStore, private Elastic {
 public:
  // Joins the job (job.role must be worker; Error(kInvalidArgument)
  // otherwise), then connects to every other worker: every worker creates
  // its store at the same point of its barrier sequence. kTimedOut when the
  // scheduler or the other workers do not come within the deadlines.
  HostAllreduceKVStore(const ps::JobConfig& job, const ps::PsOptions& options, HostAllreduceOptions allreduce = {});
  // Stops the communication thread, closes the links, then says goodbye to
  // the scheduler (bounded by shutdown_timeout_s); no barrier. A store that
  // failed leaves without a goodbye, as a lost worker: under
  // DT_WORKER_LOSS=continue the others go on without it, and a joined
  // worker that never got the job's state does not end the job as if every
  // worker had finished.
  ~HostAllreduceKVStore() override;

  std::string type() const override { return "allreduce"; }
  int rank() const override;
  int num_workers() const override;
  Elastic* elastic() override { return this; }
  const Elastic* elastic() const override { return this; }

  void init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values) override;
  void push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values, int priority) override;
  void pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs, int priority) override;
  // Checks values and outputs before any collective starts.
  void pushpull(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                const std::vector<core::NDArray>& outs, int priority) override;

  bool communicates_asynchronously() const override { return true; }
  // The values are summed on this worker before it returns (they may be
  // overwritten then); the outputs are written when the request finishes.
  std::shared_ptr<Completion> pushpull_async(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                                             const std::vector<core::NDArray>& outs, int priority) override;
  void wait(const std::shared_ptr<Completion>& request) override;
  void wait_all() override;
  // The bytes sent to and received from the other workers.
  core::Traffic traffic() const override { return group_->traffic(); }
  void report_status(const core::WorkerStatus& numbers) override { member_->report_status(numbers); }

  void barrier() override;
  // MXNet's set_gradient_compression for this store: every worker calls it
  // with the same spec, at the same point, before its first push (the specs
  // are compared across workers: a different one is Error(kInvalidArgument)
  // on every worker, after a push Error(kBadState)). Then each bucket of
  // float32 gradients is encoded (with this worker's error feedback, keyed
  // by the bucket), the encodings are all-gathered, and every worker decodes
  // and adds them in rank order: the same sums everywhere, and for n
  // workers each sends its encoding to the others instead of 2 (n-1)/n of
  // the full gradient. fp16/bf16 are SINGA's "half" update, topk/threshold
  // with error feedback its "sparse" one. Other dtypes travel in full.
  void set_gradient_compression(const std::string& spec) override;
  std::string gradient_compression() const override;

 private:
  // Elastic (elastic.h). A worker started again in a departed one's place
  // (DT_WORKER_LOSS=continue): its constructor returns once the workers in
  // the job let it in (survivor_group.h); its init() keeps its own values,
  // and hand_over_state() brings it theirs. rounds_before_joining() is 0:
  // no servers count rounds here; the state handed over says the step.
  bool joined_running_job() const override;
  int64_t rounds_before_joining() const override { return 0; }
  bool goes_on_after_worker_loss() const override { return group_->regroups(); }
  bool admit_joining_workers() override;
  std::vector<uint8_t> hand_over_state(const std::vector<uint8_t>& state) override;

  struct Entry {
    Key key = 0;
    core::NDArray stored;   // on the CPU: the last all-reduced sum, or the initial value
    core::NDArray scratch;  // the caller's KeyReducer's
    bool pending = false;   // in a bucket not yet all-reduced
  };
  // Where a finished bucket's sums go: outs[p] for p in positions.
  struct Delivery {
    Entry* entry;
    std::vector<core::NDArray> outs;
    std::vector<size_t> positions;
  };
  struct Bucket {
    // Set for collectives that are not a bucket of pushes (init's
    // broadcasts, the compression agreement): they too run on the
    // communication thread, in order, so that one thread runs every
    // collective and every regroup.
    std::function<void()> task;
    std::vector<Entry*> entries;  // in push order
    size_t bytes = 0;
    std::vector<Delivery> deliveries;
    std::vector<std::shared_ptr<Completion>> completions;
  };

  Entry& entry(Key key, const char* op);
  void check_arrays(const std::vector<Key>& keys, const std::vector<core::NDArray>& arrays, const char* op,
                    const char* what);
  // Sums each key's values into its entry and adds it to the open bucket,
  // sealing buckets as they fill; the caller holds mutex_.
  void add_to_buckets(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                      const std::vector<core::NDArray>& outs, const std::shared_ptr<Completion>& completion);
  void seal_open_bucket();  // mutex_ held
  // Waits until no bucket is open, queued or in flight; throws the store's
  // failure, if any. mutex_ held through lock.
  void drain(std::unique_lock<std::mutex>& lock);
  void throw_if_failed() const;  // mutex_ held
  // Runs task on the communication thread and waits for it; mutex_ held
  // through lock. Its failure is the store's.
  void run_on_communication_thread(std::unique_lock<std::mutex>& lock, std::function<void()> task);
  // The communication thread: all-reduces queued buckets in order.
  void communicate();
  // The communication thread's one hook for worker loss: a worker departed
  // (DT_WORKER_LOSS=continue) and nothing is queued, so it regroups now.
  // False when it did nothing. mutex_ held through lock.
  bool regroup_if_idle(std::unique_lock<std::mutex>& lock);

  const ps::PsOptions options_;
  const HostAllreduceOptions allreduce_;
  const std::shared_ptr<core::Context> cpu_;
  std::unique_ptr<ps::ClusterMember> member_;
  // What the communicators' links block on now, for stall_watch_; null when the inspector is off.
  const std::shared_ptr<collective::host::LinkWatch> link_waits_;
  // The workers still in the job and the communicator over them. Shared
  // with the member's lost- and departed-node callbacks, which abort its
  // collective from the heartbeat thread (a weak reference: the callbacks
  // may outlive it).
  std::shared_ptr<SurvivorGroup> group_;
  ops::cpu::ReductionPool cpu_sums_;  // caller_reducer_'s summing threads
  KeyReducer caller_reducer_;         // sums pushes on the caller's thread
  KeyReducer comm_reducer_;    // delivers sums on the communication thread
  // Sums the buckets, compressed after set_gradient_compression; used by
  // whichever thread runs the collectives (see mutex_).
  std::unique_ptr<FusedAllReduce> fused_;
  bool pushed_ = false;               // guarded by mutex_
  std::string compression_ = "none";  // canonical text; guarded by mutex_

  // Guards everything below, and the entries' `pending`. Collectives run
  // without it, but only one thread at a time runs them: the communication
  // thread while buckets are queued or in flight, callers otherwise.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, Entry> entries_;
  Bucket open_;
  std::deque<Bucket> queued_;
  bool in_flight_ = false;
  bool stopping_ = false;
  bool regroup_wanted_ = false;  // a worker departed: regroup when idle
  std::optional<core::Error> failure_;
  std::thread communicator_thread_;
  // The stall inspector over link_waits_ (allreduce_stall_watch.h); it reads
  // group_, so it goes first.
  std::unique_ptr<core::StallWatch> stall_watch_;
};

}  // namespace dt::kvstore
