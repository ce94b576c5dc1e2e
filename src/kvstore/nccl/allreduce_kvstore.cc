#include "kvstore/nccl/allreduce_kvstore.h"

#include <string>
#include <utility>
#include <vector>

#include "collective/nccl/all_gather_bytes.h"
#include "collective/nccl/job_communicator.h"
#include "ps/job/local_rank.h"
#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "kvstore/argument_checks.h"
#include "ops/tensor_math.h"
#include "ps/compression/compression_mode.h"

namespace dt::kvstore {

using collective::nccl::Communicator;
using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;

namespace {

const char* const kType = "dist_nccl";
// What to use instead when this store cannot be made.
const char* const kInstead = "dist_sync";

DType checked_wire(DType wire) {
  if (wire != DType::kFloat32 && wire != DType::kFloat16) {
    throw Error(ErrorCode::kInvalidArgument, std::string("kvstore 'dist_nccl' all-reduces in float32 or float16, not ") +
                                                 core::dtype_name(wire));
  }
  return wire;
}

// The GPU when it is known before joining (always checking that there is
// one); null when no launcher says where this worker sits on its host (a
// process started by hand): then it follows from the worker rank. Only the
// GPU this worker uses gets a context: one on gpu(0) from every worker of a
// host would cost gpu(0) a CUDA context per process, and fail in
// exclusive-process mode.
std::shared_ptr<core::Context> gpu_before_joining(int device) {
  if (device < -1) throw Error(ErrorCode::kInvalidArgument, "dist_nccl: device must be -1 (automatic) or a GPU id");
  if (device >= 0) return gpu_for_kvstore(kType, device, kInstead);
  // Without a GPU (or without CUDA) this throws, saying which.
  const int gpus = core::gpu_count();
  if (gpus == 0) gpu_for_kvstore(kType, 0, kInstead);
  // The GPU of this worker's place on its host (dtrun's DT_LOCAL_RANK, or
  // another launcher's), never of its global rank: rank mod GPUs puts two
  // workers of a 2-host x 2-GPU job on one GPU. Beyond the host's GPUs two
  // workers would share one, which NCCL refuses: say so here.
  const ps::LocalRank local = ps::local_rank_from_env();
  if (!local.from_launcher) return nullptr;
  if (local.rank >= gpus) {
    throw Error(ErrorCode::kInvalidArgument,
                "dist_nccl: this worker is local rank " + std::to_string(local.rank) + " of its host, which has " +
                    std::to_string(gpus) + " GPU(s): dist_nccl takes one GPU per worker, so start at most " +
                    std::to_string(gpus) + " worker(s) per host, or give each worker its GPU (options.device)");
  }
  return gpu_for_kvstore(kType, local.rank, kInstead);
}

const ps::JobConfig& worker_job(const ps::JobConfig& job) {
  if (job.role != ps::Role::kWorker) {
    throw Error(ErrorCode::kInvalidArgument, std::string("kvstore 'dist_nccl' is created by workers; this process is a ") +
                                                 ps::role_name(job.role) + " (DMLC_ROLE): run it with dt_node_run");
  }
  return job;
}

}  // namespace

AllreduceKVStore::AllreduceKVStore(const ps::JobConfig& job, const ps::PsOptions& options, AllreduceOptions allreduce)
    : options_(options),
      wire_dtype_(checked_wire(allreduce.wire_dtype)),
      gpu_(gpu_before_joining(allreduce.device)),
      member_(std::make_unique<ps::ClusterMember>(worker_job(job), options)) {
  if (!gpu_) gpu_ = gpu_for_kvstore(kType, member_->rank() % core::gpu_count(), kInstead);
  ps::ClusterMember& member = *member_;
  stall_watch_ = std::make_unique<core::StallWatch>("worker " + std::to_string(member.rank()), options.stall_warning_s,
                                                    [this] { return waits_.open(member_->stalled_workers()); });
  stall_watch_->start();
  const core::WaitNote::Scope joining(waits_, "joining the NCCL communicator on GPU " +
                                                  std::to_string(gpu_->device_id()) +
                                                  " (the rendezvous through the scheduler, then NCCL's bootstrap)");
  comm_ = collective::nccl::join_job_communicator(
      member.rank(), member.table().num_workers,
      [&member](const std::vector<uint8_t>& mine) { return member.allgather(mine); }, gpu_->device_id(),
      options_.startup_timeout_s);
  reducer_ = std::make_unique<KeyReducer>(gpu_);
}

AllreduceKVStore::~AllreduceKVStore() {
  stall_watch_.reset();  // its probe reads member_
  // The communicator first: its destruction is bounded and never waits
  // for the scheduler, which may end the job once every worker said goodbye.
  comm_.reset();
  member_->shutdown();
}

int AllreduceKVStore::rank() const { return member_->rank(); }
int AllreduceKVStore::num_workers() const { return member_->table().num_workers; }

AllreduceKVStore::Entry& AllreduceKVStore::entry(Key key, const char* op) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    throw Error(ErrorCode::kNotFound, std::string(op) + ": key " + std::to_string(key) + " has not been initialised");
  }
  return it->second;
}

void AllreduceKVStore::check_arrays(const std::vector<Key>& keys, const std::vector<NDArray>& arrays, const char* op,
                                    const char* what) {
  check_lengths(keys.size(), arrays.size(), op, what);
  for (size_t i = 0; i < keys.size(); ++i) {
    const NDArray& stored = entry(keys[i], op).stored;
    check_value(keys[i], stored.dtype(), stored.shape(), arrays[i], op);
  }
}

void AllreduceKVStore::collective(const std::function<void(Communicator&, cudaStream_t)>& enqueue) {
  const cudaStream_t stream = core::cuda::stream_of(*gpu_);
  const core::WaitNote::Scope noted(waits_, "NCCL collective call " + std::to_string(++collectives_) + " on GPU " +
                                                std::to_string(gpu_->device_id()));
  collective::nccl::run_group({comm_.get()}, [&] { enqueue(*comm_, stream); });
  // A lost worker never joins the collective: NCCL may report it, the
  // deadline ends the wait otherwise.
  comm_->synchronize(stream, options_.request_timeout_s);
}

void AllreduceKVStore::init(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_init(keys, values, [this](Key key) { return entries_.count(key) > 0; });
  std::vector<NDArray> stored;
  for (const NDArray& value : values) {
    NDArray copy = NDArray::empty(gpu_, value.dtype(), value.shape());
    copy.copy_from(value);
    stored.push_back(copy);
  }
  // Worker 0's values everywhere; the keys exist only once that worked.
  collective([&](Communicator& comm, cudaStream_t stream) {
    for (const NDArray& s : stored) comm.broadcast(s.data(), s.data(), s.size(), s.dtype(), 0, stream);
  });
  for (size_t i = 0; i < keys.size(); ++i) entries_.emplace(keys[i], Entry{stored[i], {}, {}, {}});
}

void AllreduceKVStore::apply_push(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  pushed_ = true;
  const auto groups = group_keys(keys);
  std::vector<Entry*> reduced;
  std::vector<std::pair<Key, Entry*>> encoded;  // through the codec, after the NCCL group
  for (const KeyGroup& group : groups) {
    Entry& e = entries_.at(group.key);
    reducer_->sum(values, group.positions, e.stored, e.scratch);
    if (compressed_ && e.stored.dtype() == DType::kFloat32) {
      encoded.emplace_back(group.key, &e);
      continue;
    }
    if (wire_dtype_ != DType::kFloat32 && e.stored.dtype() == DType::kFloat32) {
      if (!e.wire.defined()) e.wire = NDArray::empty(gpu_, wire_dtype_, e.stored.shape());
      if (error_feedback_) {
        if (!e.residual.defined()) e.residual = NDArray::zeros(gpu_, DType::kFloat32, e.stored.shape());
        ops::add(e.stored, e.stored, e.residual);  // what earlier casts lost
      }
      ops::cast(e.wire, e.stored);
      if (error_feedback_) {
        // residual = stored - float32(wire), in three exact steps on the GPU.
        ops::cast(e.residual, e.wire);
        ops::axpy(e.residual, -1.0, e.stored);
        ops::scale(e.residual, -1.0);
      }
    }
    reduced.push_back(&e);
  }
  // Casts, collectives and casts back are ordered by the one stream.
  collective([&](Communicator& comm, cudaStream_t stream) {
    for (Entry* e : reduced) {
      const NDArray& sent = e->wire.defined() ? e->wire : e->stored;
      comm.all_reduce_sum(sent.data(), sent.data(), sent.size(), sent.dtype(), stream);
    }
  });
  for (Entry* e : reduced) {
    if (e->wire.defined()) ops::cast(e->stored, e->wire);
  }
  for (const auto& [key, e] : encoded) all_reduce_encoded(key, *e);
  // The casts back ran on our stream; pulls copy from it on other streams.
  gpu_->synchronize();
}

void AllreduceKVStore::all_reduce_encoded(Key key, Entry& e) {
  const size_t n = e.stored.size();
  host_.resize(n);
  e.stored.copy_to_host(host_.data(), e.stored.nbytes());
  // No rank's encoding of n values is longer: a longer one is another key.
  const size_t limit = compressed_->codec().max_encoded_size(n);
  compressed_->run(host_.data(), n, key, [&](const uint8_t* data, size_t size) {
    const core::WaitNote::Scope noted(waits_, "NCCL all-gather " + std::to_string(++collectives_) + " of key " +
                                                  std::to_string(key) + "'s encoding on GPU " +
                                                  std::to_string(gpu_->device_id()));
    return collective::nccl::all_gather_bytes(*comm_, gpu_, data, size, key, limit, options_.request_timeout_s);
  });
  e.stored.copy_from_host(host_.data(), e.stored.nbytes());
}

void AllreduceKVStore::apply_pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs) {
  for (const KeyGroup& group : group_keys(keys)) reducer_->broadcast(entries_.at(group.key).stored, outs, group.positions);
}

void AllreduceKVStore::push(const std::vector<Key>& keys, const std::vector<NDArray>& values, int) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_arrays(keys, values, "push", "values");
  apply_push(keys, values);
}

void AllreduceKVStore::pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs, int) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_arrays(keys, outs, "pull", "outputs");
  apply_pull(keys, outs);
}

void AllreduceKVStore::pushpull(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                                const std::vector<NDArray>& outs, int) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_arrays(keys, values, "pushpull", "values");
  check_arrays(keys, outs, "pushpull", "outputs");
  apply_push(keys, values);
  apply_pull(keys, outs);
}

void AllreduceKVStore::barrier() { member_->barrier(); }

void AllreduceKVStore::set_gradient_compression(const std::string& spec) {
  const ps::compression::CompressionConfig config = ps::compression::CompressionConfig::parse(spec);
  using ps::compression::CompressionMode;
  std::lock_guard<std::mutex> lock(mutex_);
  if (pushed_) {
    throw Error(ErrorCode::kBadState, "set_gradient_compression('" + config.to_string() +
                                          "') on kvstore 'dist_nccl' after its first push (it is fixed from then on)");
  }
  // All workers or none: a worker all-reducing float16 against another's
  // float32 would sum garbage, one all-gathering encodings against another's
  // all-reduce would wait for it in vain, so they compare texts first (one
  // all-gather through the scheduler, which every worker makes at this point).
  const std::string mine = config.to_string();
  const std::vector<std::vector<uint8_t>> all = member_->allgather(std::vector<uint8_t>(mine.begin(), mine.end()));
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string theirs(all[r].begin(), all[r].end());
    if (theirs != mine) {
      throw Error(ErrorCode::kInvalidArgument, "gradient compression '" + mine + "' on worker " +
                                                   std::to_string(member_->rank()) + " but '" + theirs + "' on worker " +
                                                   std::to_string(r) + " (dist_nccl: every worker sets the same)");
    }
  }
  wire_dtype_ = config.mode == CompressionMode::kFp16   ? DType::kFloat16
                : config.mode == CompressionMode::kBf16 ? DType::kBFloat16
                                                        : DType::kFloat32;
  error_feedback_ = config.error_feedback;
  // The cast modes need no codec; a new one starts without residuals.
  if (config.mode == CompressionMode::kNone || config.mode == CompressionMode::kFp16 ||
      config.mode == CompressionMode::kBf16) {
    compressed_.reset();
  } else {
    compressed_.emplace(kType, config);
  }
  compression_ = mine;
  for (auto& [key, e] : entries_) {
    e.wire = NDArray();  // a new wire type; no residual yet (no push happened)
    e.residual = NDArray();
  }
}

std::string AllreduceKVStore::gradient_compression() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return compression_;
}

}  // namespace dt::kvstore
