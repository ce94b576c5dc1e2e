// The "dist_nccl" kvstore: data-parallel all-reduce across the worker
// processes of a disttrain job, one GPU per worker, in the spirit of SINGA's
// DistOpt and Horovod's kvstore for MXNet. There is no parameter server in
// the data path: the job's scheduler only introduces the workers (the NCCL
// unique id travels through it, collective::nccl::join_job_communicator;
// no MPI) and runs barriers; the job needs no servers (dtrun -s 0), and
// any it has stay idle.
//  - init(keys, values): every worker's store starts from worker 0's values
//    (an NCCL broadcast), so all replicas begin equal.
//  - push: the values listed under a key are summed on this worker's GPU
//    (KeyReducer: NCCL across local GPUs, adds otherwise), then all-reduced
//    (sum) across the workers; the result replaces the key's stored value.
//    All keys of one call go in one NCCL group.
//  - pull copies the stored value (the last all-reduced sum, or the initial
//    value) to the outputs listed under the key.
//  - The store runs no optimizer (set_optimizer is Error(kNotSupported)):
//    workers update their own weights with the summed gradients, as with
//    Horovod; the trainer does so with this store by default.
//  - Every worker must call init/push/pushpull with the same keys in the
//    same order (collectives match by order, as in Horovod without its
//    negotiation); a worker that does not turns into Error(kTimedOut) after
//    request_timeout_s, or Error(kNccl) when NCCL sees the peer fail, and
//    the store is unusable afterwards.
//  - Option: all-reduce float32 keys as float16 (cast on the GPU before,
//    back after), halving the bytes on the wire at float16's precision.
//  - Gradient compression (set_gradient_compression, issue 16): "fp16" and
//    "bf16" all-reduce float32 keys in that type, by a cast on the GPU, and
//    with error feedback (on by default) keep per key what the cast lost
//    and add it to the next push; "none" goes back to float32. "2bit",
//    "1bit", "topk" and "threshold" go as on the "allreduce" store
//    (CompressedAllReduce): each float32 key's local sum is copied to host
//    memory, encoded with this worker's error feedback for the key, the
//    encodings are all-gathered (collective::nccl::all_gather_bytes) and
//    every worker decodes and adds them in rank order, so the sums are
//    bit-identical everywhere; the result is copied back to the key's GPU
//    array. Through host memory because the codecs are host code and the
//    encodings differ in size from worker to worker, which a sum
//    all-reduce cannot carry; only the encodings (padded to the largest)
//    cross the network. Other dtypes travel in full. Every worker sets the same text before its
//    first push (an exchange among the workers checks it: a different
//    text is Error(kInvalidArgument) on every worker, never a collective
//    of mismatched types or sizes).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collective/nccl/communicator.h"
#include "core/context.h"
#include "core/dtype.h"
#include "core/stall_watch.h"
#include "core/wait_note.h"
#include "kvstore/compressed_all_reduce.h"
#include "kvstore/key_reducer.h"
#include "kvstore/kvstore.h"
#include "kvstore/reducing_kvstore.h"
#include "ps/job/job_config.h"
#include "ps/roles/cluster_member.h"

namespace dt::kvstore {

struct AllreduceOptions {
  // The GPU of this worker; -1: the launcher's local rank (LOCAL_RANK,
  // OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID), else the worker rank, modulo
  // the visible GPUs.
  int device = -1;
  // kFloat32, or kFloat16 to all-reduce float32 keys as float16 (other
  // dtypes travel as they are).
  core::DType wire_dtype = core::DType::kFloat32;
};

class AllreduceKVStore final : public ReducingKVStore {
 public:
  // Joins the job (job.role must be worker; Error(kInvalidArgument)
  // otherwise), then the workers' NCCL communicator: every worker creates
  // its store at the same point of its barrier sequence. Error(kNoDevice)
  // without the GPU, kTimedOut when the scheduler or the other workers do
  // not come within startup_timeout_s.
  AllreduceKVStore(const ps::JobConfig& job, const ps::PsOptions& options, AllreduceOptions allreduce = {});
  // Frees the communicator, then says goodbye to the scheduler (bounded by
  // shutdown_timeout_s); no barrier.
  ~AllreduceKVStore() override;

  std::string type() const override { return "dist_nccl"; }
  int rank() const override;
  int num_workers() const override;
  const std::shared_ptr<core::Context>& device() const { return gpu_; }

  void init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values) override;
  void push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values, int priority) override;
  void pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs, int priority) override;
  // Checks values and outputs before any collective starts.
  void pushpull(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                const std::vector<core::NDArray>& outs, int priority) override;

  void barrier() override;
  void report_status(const core::WorkerStatus& numbers) override { member_->report_status(numbers); }
  void set_gradient_compression(const std::string& spec) override;
  std::string gradient_compression() const override;

 private:
  struct Entry {
    core::NDArray stored;   // on gpu_: the last all-reduced sum, or the initial value
    core::NDArray wire;      // float16/bfloat16 copy for the all-reduce, allocated on first need
    core::NDArray scratch;   // KeyReducer's
    core::NDArray residual;  // error feedback: what the cast to wire lost, float32
  };
  Entry& entry(Key key, const char* op);
  void check_arrays(const std::vector<Key>& keys, const std::vector<core::NDArray>& arrays, const char* op,
                    const char* what);
  void apply_push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values);
  void apply_pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs);
  // The compressed all-reduce of a float32 key's local sum, in place,
  // through host memory (compressed_ is set).
  void all_reduce_encoded(Key key, Entry& e);
  // Runs the collectives that enqueue queues (one NCCL group) and waits for
  // them, bounded by request_timeout_s.
  void collective(const std::function<void(collective::nccl::Communicator&, cudaStream_t)>& enqueue);

  const ps::PsOptions options_;
  // Guarded by mutex_: float32, float16 or bfloat16, and whether casts keep
  // their residual; fixed from the first push on.
  core::DType wire_dtype_;
  bool error_feedback_ = false;
  // Guarded by mutex_: the codec modes (2bit, 1bit, topk, threshold), with
  // this worker's residuals keyed by key; empty otherwise.
  std::optional<CompressedAllReduce> compressed_;
  std::vector<float> host_;  // a key's values on their way through the codec; reused
  bool pushed_ = false;
  std::string compression_ = "none";
  // Chosen before joining when the device is known then (a missing GPU
  // fails before the job waits for this worker), else by rank.
  std::shared_ptr<core::Context> gpu_;
  std::unique_ptr<ps::ClusterMember> member_;
  std::unique_ptr<collective::nccl::Communicator> comm_;
  std::unique_ptr<KeyReducer> reducer_;  // on gpu_
  mutable std::mutex mutex_;  // one call at a time: collectives must leave in the same order everywhere
  std::map<Key, Entry> entries_;
  uint64_t collectives_ = 0;  // guarded by mutex_: numbers the waits noted in waits_
  // The stall inspector: the host-side waits (joining the communicator, each
  // collective's synchronize) noted in waits_, named late by stall_watch_
  // with the workers the scheduler's news says are stalled (NCCL does not
  // say which peer a kernel waits for). The watch reads member_, so it goes
  // first.
  core::WaitNote waits_;
  std::unique_ptr<core::StallWatch> stall_watch_;
};

}  // namespace dt::kvstore
