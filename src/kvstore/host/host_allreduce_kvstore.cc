#include "kvstore/host/host_allreduce_kvstore.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "collective/host/all_gather.h"
#include "core/ndarray.h"
#include "kvstore/argument_checks.h"
#include "kvstore/host/allreduce_stall_watch.h"

namespace dt::kvstore {

using collective::host::HostCommunicator;
using core::Error;
using core::ErrorCode;
using core::NDArray;

namespace {

const ps::JobConfig& worker_job(const ps::JobConfig& job) {
  if (job.role != ps::Role::kWorker) {
    throw Error(ErrorCode::kInvalidArgument, std::string("kvstore 'allreduce' is created by workers; this process is a ") +
                                                 ps::role_name(job.role) + " (DMLC_ROLE): run it with dt_node_run");
  }
  return job;
}

HostAllreduceOptions checked(HostAllreduceOptions o) {
  if (o.bucket_bytes == 0) throw Error(ErrorCode::kInvalidArgument, "allreduce: bucket_bytes must be positive");
  return o;
}

collective::host::HostCommunicatorOptions communicator_options(
    const ps::JobConfig& job, const ps::PsOptions& options, const HostAllreduceOptions& allreduce,
    std::shared_ptr<collective::host::LinkWatch> receives) {
  collective::host::HostCommunicatorOptions o;
  o.link_watch = std::move(receives);
  o.hierarchical = allreduce.hierarchical;
  // Connecting and every collective wait as long as a request to a server.
  o.timeout_s = options.request_timeout_s;
  o.host = job.node_host.empty() ? "127.0.0.1" : job.node_host;
  o.security = job.security;
  return o;
}

// How long one bucket may take: the communicator's deadline, the heartbeat
// timeout that names a stalled peer, and under DT_WORKER_LOSS=continue a
// regroup (the news of the loss, then meeting the survivors).
std::chrono::duration<double> bucket_patience(const ps::PsOptions& o) {
  double seconds = o.request_timeout_s + o.heartbeat_timeout_s + 5;
  if (o.worker_loss == ps::WorkerLossPolicy::kContinue) {
    seconds += o.request_timeout_s + o.heartbeat_timeout_s + 2 * o.heartbeat_interval_s;
  }
  return std::chrono::duration<double>(seconds);
}

}  // namespace

HostAllreduceKVStore::HostAllreduceKVStore(const ps::JobConfig& job, const ps::PsOptions& options,
                                           HostAllreduceOptions allreduce)
    : options_(options),
      allreduce_(checked(allreduce)),
      cpu_(core::make_cpu_context()),
      member_(std::make_unique<ps::ClusterMember>(worker_job(job), options)),
      // Off (DT_STALL_WARNING_S=0), no note: the ring's waits take no lock.
      link_waits_(options.stall_warning_s > 0 ? std::make_shared<collective::host::LinkWatch>() : nullptr),
      cpu_sums_(options.reduction()),
      caller_reducer_(cpu_, &cpu_sums_),
      comm_reducer_(cpu_) {
  // Watching from the rendezvous on: a worker that does not come is a stall
  // too. The probe reads group_ only for a receive from a peer, which the
  // communication thread notes, started once group_ is set.
  stall_watch_ = start_allreduce_stall_watch(*member_, options.stall_warning_s, link_waits_,
                                             [this] { return group_ ? group_->workers() : std::vector<int>{}; });
  group_ = std::make_shared<SurvivorGroup>(*member_, options, communicator_options(job, options, allreduce_, link_waits_));
  fused_ = std::make_unique<FusedAllReduce>(*group_, *member_, allreduce_.bucket_bytes);
  // A worker lost to the scheduler's heartbeats (a stalled process, a dead
  // host) ends the collective in progress at once, naming it.
  std::weak_ptr<SurvivorGroup> weak = group_;
  member_->on_lost([weak](const ps::LostNode& lost) {
    if (auto group = weak.lock()) group->abort(lost.message());
  });
  // DT_WORKER_LOSS=continue: a worker the job goes on without ends the
  // collective in progress too, and the communication thread regroups (at
  // once when idle: the others may be waiting for it in the regroup). The
  // callbacks stop before the store's members go: the destructor's
  // member_->shutdown() stops the heartbeat thread.
  member_->on_departed([this, weak](const ps::LostNode& gone) {
    if (gone.role != ps::Role::kWorker) return;
    if (auto group = weak.lock()) group->on_departure(gone.rank, gone.message());
    std::lock_guard<std::mutex> lock(mutex_);
    regroup_wanted_ = true;
    changed_.notify_all();
  });
  communicator_thread_ = std::thread([this] { communicate(); });
}

HostAllreduceKVStore::~HostAllreduceKVStore() {
  stall_watch_.reset();  // its probe reads group_
  bool busy = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    busy = in_flight_ || !queued_.empty();
  }
  changed_.notify_all();
  // Requests nobody waited for fail at once rather than hold the thread for
  // the communicator's deadline.
  if (busy) group_->abort("the kvstore was destroyed with requests in flight");
  if (communicator_thread_.joinable()) communicator_thread_.join();
  // The links first: closing them is bounded and never waits for the
  // scheduler, which may end the job once every worker said goodbye.
  fused_.reset();
  group_.reset();
  bool failed = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed = failure_.has_value();
  }
  if (!failed) member_->shutdown();
}

int HostAllreduceKVStore::rank() const { return member_->rank(); }
int HostAllreduceKVStore::num_workers() const { return member_->table().num_workers; }

HostAllreduceKVStore::Entry& HostAllreduceKVStore::entry(Key key, const char* op) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    throw Error(ErrorCode::kNotFound, std::string(op) + ": key " + std::to_string(key) + " has not been initialised");
  }
  return it->second;
}

void HostAllreduceKVStore::check_arrays(const std::vector<Key>& keys, const std::vector<NDArray>& arrays,
                                        const char* op, const char* what) {
  check_lengths(keys.size(), arrays.size(), op, what);
  for (size_t i = 0; i < keys.size(); ++i) {
    const NDArray& stored = entry(keys[i], op).stored;
    check_value(keys[i], stored.dtype(), stored.shape(), arrays[i], op);
  }
}

void HostAllreduceKVStore::throw_if_failed() const {
  if (failure_) throw *failure_;
}

// ---- the collectives ----------------------------------------------------------

bool HostAllreduceKVStore::regroup_if_idle(std::unique_lock<std::mutex>& lock) {
  const bool idle_regroup = regroup_wanted_ && queued_.empty() && !stopping_ && !failure_;
  regroup_wanted_ = false;
  if (!idle_regroup) return false;
  // Nothing to send: regroup now, for the survivors already waiting in the
  // regroup (a step queued later would regroup first anyway).
  in_flight_ = true;
  lock.unlock();
  group_->regroup();
  lock.lock();
  in_flight_ = false;
  changed_.notify_all();
  return true;
}

void HostAllreduceKVStore::communicate() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queued_.empty() || regroup_wanted_; });
    if (regroup_if_idle(lock)) continue;
    if (queued_.empty()) {
      if (stopping_) return;  // nothing left
      continue;
    }
    Bucket bucket = std::move(queued_.front());
    queued_.pop_front();
    in_flight_ = true;
    std::optional<Error> error = failure_;
    lock.unlock();
    if (!error) {
      try {
        if (bucket.task) {
          bucket.task();
        } else {
          std::vector<FusedAllReduce::Item> items;
          for (const Entry* e : bucket.entries) items.emplace_back(e->key, e->stored);
          fused_->run(items);
          for (const Delivery& d : bucket.deliveries) comm_reducer_.broadcast(d.entry->stored, d.outs, d.positions);
        }
      } catch (const Error& e) {
        error = e;
      } catch (const std::exception& e) {
        error = Error(ErrorCode::kInternal, std::string("allreduce: ") + e.what());
      }
    }
    lock.lock();
    in_flight_ = false;
    for (Entry* e : bucket.entries) e->pending = false;
    if (error && !failure_) failure_ = error;
    for (const auto& c : bucket.completions) c->finish(error);
    changed_.notify_all();
  }
}

// ---- buckets ------------------------------------------------------------------

void HostAllreduceKVStore::seal_open_bucket() {
  if (open_.entries.empty()) return;
  queued_.push_back(std::move(open_));
  open_ = Bucket{};
  changed_.notify_all();
}

void HostAllreduceKVStore::drain(std::unique_lock<std::mutex>& lock) {
  seal_open_bucket();
  // Each bucket is bounded by the communicator's deadline; this bound only
  // guards against a thread that stopped making progress at all.
  const auto patience = bucket_patience(options_);
  size_t left = queued_.size() + (in_flight_ ? 1 : 0);
  while (left > 0) {
    if (!changed_.wait_for(lock, patience, [&] { return queued_.size() + (in_flight_ ? 1 : 0) < left; })) {
      if (!failure_) failure_ = Error(ErrorCode::kTimedOut, "allreduce: no bucket finished within " +
                                                                ps::seconds_text(patience.count()));
      group_->abort(failure_->what());
      throw *failure_;
    }
    left = queued_.size() + (in_flight_ ? 1 : 0);
  }
  throw_if_failed();
}

void HostAllreduceKVStore::run_on_communication_thread(std::unique_lock<std::mutex>& lock, std::function<void()> task) {
  drain(lock);
  Bucket work;
  work.task = std::move(task);
  queued_.push_back(std::move(work));
  changed_.notify_all();
  drain(lock);
}

void HostAllreduceKVStore::set_gradient_compression(const std::string& spec) {
  const ps::compression::CompressionConfig config = ps::compression::CompressionConfig::parse(spec);
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  if (pushed_) {
    throw Error(ErrorCode::kBadState, "set_gradient_compression: this store has pushed already; set it before "
                                      "the first push, on every worker");
  }
  // Every worker's canonical spec, compared: the same decision everywhere.
  // A joined worker runs the job's command again, with the spec the others
  // agreed on at the start; they compare no more.
  const std::string mine = config.to_string();
  std::vector<std::vector<uint8_t>> all;
  if (!joined_running_job()) run_on_communication_thread(lock, [&] {
    member_->check_peers();
    group_->run_step(
        [&](HostCommunicator& comm) {
          all = collective::host::all_gather(comm, mine.data(), mine.size());
          group_->confirm_step(comm);
        },
        nullptr, 0);
  });
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string theirs(all[r].begin(), all[r].end());
    if (theirs != mine) {
      throw Error(ErrorCode::kInvalidArgument, "set_gradient_compression: worker " + std::to_string(r) + " asks for '" +
                                                   theirs + "', worker " + std::to_string(member_->rank()) +
                                                   " for '" + mine + "': every worker must set the same");
    }
  }
  fused_->set_compression(config);
  compression_ = mine;
}

std::string HostAllreduceKVStore::gradient_compression() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return compression_;
}

void HostAllreduceKVStore::add_to_buckets(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                                          const std::vector<NDArray>& outs,
                                          const std::shared_ptr<Completion>& completion) {
  bool last_in_open = false;
  pushed_ = true;
  // The keys of one call in key order: workers that list the same keys in
  // another order still cut the same buckets (DDP fixes its bucket order
  // from the parameters in the same spirit). Across calls, the order of the
  // calls is the order of the buckets.
  std::vector<KeyGroup> groups = group_keys(keys);
  std::sort(groups.begin(), groups.end(), [](const KeyGroup& a, const KeyGroup& b) { return a.key < b.key; });
  for (const KeyGroup& group : groups) {
    Entry& e = entries_.at(group.key);
    caller_reducer_.sum(values, group.positions, e.stored, e.scratch);
    if (!open_.entries.empty() && open_.entries.front()->stored.dtype() != e.stored.dtype()) seal_open_bucket();
    open_.entries.push_back(&e);
    open_.bytes += e.stored.nbytes();
    e.pending = true;
    if (!outs.empty()) open_.deliveries.push_back(Delivery{&e, outs, group.positions});
    last_in_open = true;
    if (open_.bytes >= allreduce_.bucket_bytes) {
      seal_open_bucket();
      last_in_open = false;
    }
  }
  // The completion belongs with the bucket that holds the call's last key:
  // buckets finish in order.
  if (!completion) return;
  if (last_in_open) {
    open_.completions.push_back(completion);
  } else if (!queued_.empty()) {
    queued_.back().completions.push_back(completion);
  } else {
    completion->finish();  // nothing to wait for (no keys)
  }
}

// ---- the kvstore calls --------------------------------------------------------

void HostAllreduceKVStore::init(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  check_init(keys, values, [this](Key key) { return entries_.count(key) > 0; });
  drain(lock);
  std::vector<NDArray> stored;
  for (const NDArray& value : values) {
    NDArray copy = NDArray::empty(cpu_, value.dtype(), value.shape());
    copy.copy_from(value);
    stored.push_back(copy);
  }
  // A joined worker's keys start from its own values: the workers in the
  // job initialised theirs long ago, and hand their state over instead.
  if (joined_running_job()) {
    for (size_t i = 0; i < keys.size(); ++i) entries_.emplace(keys[i], Entry{keys[i], stored[i], {}, false});
    return;
  }
  // Worker 0's values everywhere (after a regroup, the first survivor's);
  // the keys exist only once that worked.
  run_on_communication_thread(lock, [&] {
    member_->check_peers();
    group_->run_step(
        [&](HostCommunicator& comm) {
          for (const NDArray& s : stored) comm.broadcast(s.data(), s.nbytes(), 0);
          group_->confirm_step(comm);
        },
        nullptr, 0);
  });
  for (size_t i = 0; i < keys.size(); ++i) entries_.emplace(keys[i], Entry{keys[i], stored[i], {}, false});
}

std::shared_ptr<Completion> HostAllreduceKVStore::pushpull_async(const std::vector<Key>& keys,
                                                                 const std::vector<NDArray>& values,
                                                                 const std::vector<NDArray>& outs, int) {
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  check_arrays(keys, values, "pushpull", "values");
  check_arrays(keys, outs, "pushpull", "outputs");
  // A key pushed again before its last sum arrived: that sum must land
  // first (the new values are summed into the same buffer).
  for (Key key : keys) {
    if (entries_.at(key).pending) {
      drain(lock);
      break;
    }
  }
  auto completion = std::make_shared<Completion>();
  add_to_buckets(keys, values, outs, completion);
  return completion;
}

void HostAllreduceKVStore::wait(const std::shared_ptr<Completion>& request) {
  if (!request) throw Error(ErrorCode::kInvalidArgument, "wait: no request");
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (const auto& c : open_.completions) {
      if (c == request) {
        seal_open_bucket();
        break;
      }
    }
  }
  // Buckets ahead of it each get the communicator's deadline.
  const auto patience = bucket_patience(options_);
  while (!request->wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(patience))) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (failure_) throw *failure_;
    if (queued_.empty() && !in_flight_) {
      throw Error(ErrorCode::kInternal, "allreduce: a request was lost");
    }
  }
  if (auto error = request->error()) throw *error;
}

void HostAllreduceKVStore::wait_all() {
  std::unique_lock<std::mutex> lock(mutex_);
  drain(lock);
}

void HostAllreduceKVStore::push(const std::vector<Key>& keys, const std::vector<NDArray>& values, int) {
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  check_arrays(keys, values, "push", "values");
  drain(lock);
  add_to_buckets(keys, values, {}, nullptr);
  drain(lock);
}

void HostAllreduceKVStore::pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs, int) {
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  check_arrays(keys, outs, "pull", "outputs");
  drain(lock);
  for (const KeyGroup& group : group_keys(keys)) {
    caller_reducer_.broadcast(entries_.at(group.key).stored, outs, group.positions);
  }
}

void HostAllreduceKVStore::pushpull(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                                    const std::vector<NDArray>& outs, int priority) {
  pushpull_async(keys, values, outs, priority);
  wait_all();
}

void HostAllreduceKVStore::barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  drain(lock);
  member_->barrier();
}

// ---- joining (DT_WORKER_LOSS=continue): each a hook into the survivor group ----

bool HostAllreduceKVStore::joined_running_job() const { return member_->table().joined_running_job; }

bool HostAllreduceKVStore::admit_joining_workers() {
  if (!group_->regroups()) return false;
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  // Most calls do not vote: they return without waking the communication
  // thread.
  if (!group_->vote_due()) return false;
  bool admitted = false;
  run_on_communication_thread(lock, [&] { admitted = group_->admit_waiting_workers(); });
  return admitted;
}

std::vector<uint8_t> HostAllreduceKVStore::hand_over_state(const std::vector<uint8_t>& state) {
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  // Refused here, on the caller's thread, so the store goes on: with nobody
  // let in there is nothing to hand over.
  if (!group_->hand_over_due()) {
    throw Error(ErrorCode::kBadState,
                "hand_over_state: worker " + std::to_string(member_->rank()) + " let nobody in; " +
                    (group_->regroups() ? std::string("call it on every worker of the job once admit_joining_workers "
                                                      "returned true")
                                        : std::string("a job lets workers in only under DT_WORKER_LOSS=continue")));
  }
  std::vector<uint8_t> result;
  run_on_communication_thread(lock, [&] { result = group_->hand_over(state); });
  return result;
}

}  // namespace dt::kvstore
