#include "kvstore/dist_kvstore.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "core/error.h"
#include "kvstore/argument_checks.h"
#include "kvstore/optimizer_state_transfer.h"
#include "kvstore/running_job_join.h"
#include "optim/optimizer.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/state_codec.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using core::NDArray;
using ps::wire::DataOp;

namespace {

// How often waits look for a lost peer.
constexpr auto kFailurePoll = std::chrono::milliseconds(20);

bool is_device_type(const std::string& type) { return type == "dist_sync_device" || type == "dist_async_device"; }

std::string checked_type(const std::string& type) {
  if (type != "dist_sync" && type != "dist_async" && !is_device_type(type)) {
    throw Error(ErrorCode::kInvalidArgument, "DistKVStore serves dist_sync, dist_async, dist_sync_device and "
                                             "dist_async_device, not '" + type + "'");
  }
  return type;
}

// The merge that type needs; checked before the store joins the job.
std::unique_ptr<WorkerMerge> checked_merge(const std::string& type, std::unique_ptr<WorkerMerge> merge,
                                           const ps::PsOptions& options) {
  if (!merge) merge = WorkerMerge::on_host(options.reduction());
  if (merge->merges_on_device() != is_device_type(type)) {
    throw Error(ErrorCode::kInvalidArgument, "kvstore '" + type + "' needs a " +
                                                 (is_device_type(type) ? "device" : "host") + " merge");
  }
  return merge;
}

ps::JobConfig worker_job(const ps::JobConfig& job, const std::string& type) {
  if (job.role != ps::Role::kWorker) {
    throw Error(ErrorCode::kInvalidArgument, std::string("a dist kvstore is created by workers; this process is a ") +
                                                 ps::role_name(job.role) + " (DMLC_ROLE): run it with dt_node_run");
  }
  // Before joining: a job without servers would otherwise fail later, at the
  // first key, with a message about key placement.
  if (job.num_servers == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "kvstore '" + type + "' needs parameter servers, but this job has none (DMLC_NUM_SERVER=0, " +
                    job.layout_summary + "); start servers (dtrun -s N) or use the all-reduce store 'allreduce'");
  }
  return job;
}

}  // namespace

DistKVStore::DistKVStore(const std::string& type, const ps::JobConfig& job, const ps::PsOptions& options,
                         ps::DataTransport transport, int max_in_flight_per_server,
                         std::unique_ptr<WorkerMerge> merge)
    : type_(checked_type(type)),
      sync_(type_.rfind("dist_sync", 0) == 0),
      merge_(checked_merge(type_, std::move(merge), options)),
      options_(options),
      cpu_(core::make_cpu_context()),
      member_(std::make_unique<ps::ClusterMember>(worker_job(job, type_), options)),
      client_(std::make_unique<ps::WorkerClient>(member_->table(), job.node_host, transport, options, job.security)),
      placement_(member_->table().num_servers, options.bigarray_bound_bytes) {
  scheduler_ = std::make_unique<RequestScheduler>(RequestScheduler::link_to(*client_), member_->rank(), sync_,
                                                  max_in_flight_per_server, options.server_replicas > 0,
                                                  // As report() waits for a lost peer's name.
                                                  ps::to_ms(2 * options.heartbeat_timeout_s));
  news_ = std::make_unique<ClusterNews>(*member_, *client_, *scheduler_);
  servers_ = std::make_unique<ServerExchange>(*client_, *scheduler_, ps::to_ms(2 * options.heartbeat_timeout_s));
  stall_watch_ = std::make_unique<core::StallWatch>("worker " + std::to_string(member_->rank()),
                                                    options.stall_warning_s, [this] {
                                                      return scheduler_->waiting().open(member_->stalled_workers());
                                                    });
  stall_watch_->start();
  if (!member_->table().joined_running_job) return;
  try {
    rounds_before_joining_ = join_running_job(*servers_, member_->rank(), sync_);
  } catch (...) {
    // No destructor runs: the client goes before the member's heartbeat
    // thread ends, as there.
    news_->forget_client();
    throw;
  }
}

DistKVStore::~DistKVStore() {
  stall_watch_.reset();  // its probe reads the scheduler and the member
  news_->closing();  // servers closing their connections now are the job ending
  scheduler_->close();
  // The member skips its goodbye to the scheduler once any peer is known
  // lost (the job is over); a failure only the data path saw counts too.
  const bool failed = client_->failure().has_value();
  // A loss the member heard of but the client has not (its news came as the
  // store closed): the client's sockets are abandoned, not closed, after a
  // failed job (ps::WorkerClient's destructor says why).
  if (!failed) {
    const auto lost = member_->lost();
    if (!lost.empty()) client_->fail(Error(ErrorCode::kPeerLost, lost.front().message()));
  }
  // The heartbeat thread runs until the member ends, after this: a loss it
  // hears of from now on finds no client (one that reached it first ends
  // before this goes on).
  news_->forget_client();
  // Closing the connections answers every message in flight (kClosed) and
  // waits for their handlers, which touch the request scheduler.
  client_.reset();
  if (!failed) member_->shutdown();
}

int DistKVStore::rank() const { return member_->rank(); }
int DistKVStore::num_workers() const { return member_->table().num_workers; }

DistKVStore::KeyMeta& DistKVStore::meta(Key key, const char* op) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    throw Error(ErrorCode::kNotFound, std::string(op) + ": key " + std::to_string(key) + " has not been initialised");
  }
  return it->second;
}

void DistKVStore::broadcast_command(DataOp op, const std::string& text, double number) {
  // Commands apply to what follows them: earlier requests finish first.
  wait_outstanding();
  client_->check();
  servers_->run([&](int) { return ps::encode_data_request(op, member_->rank(), {}, text, number).message; },
                        [](int, const ps::Frame&) {});
}

// ---- waiting ----------------------------------------------------------------

void DistKVStore::throw_unreported() {
  if (auto failed = scheduler_->take_unreported()) {
    if (auto error = failed->error()) report(*error);
  }
}

void DistKVStore::report(const Error& error) {
  // A dropped connection is usually a dead server: give the heartbeats time
  // to name it, so the caller sees which node was lost.
  if (error.code() == ErrorCode::kNetwork || error.code() == ErrorCode::kTimedOut ||
      error.code() == ErrorCode::kClosed) {
    const auto verdict = std::chrono::steady_clock::now() + ps::to_ms(2 * options_.heartbeat_timeout_s);
    while (std::chrono::steady_clock::now() < verdict) {
      if (auto failure = client_->failure()) throw *failure;
      std::this_thread::sleep_for(kFailurePoll);
    }
  }
  if (auto failure = client_->failure()) throw *failure;
  throw error;
}

void DistKVStore::await(const std::shared_ptr<Completion>& request) {
  const auto patience = ps::to_ms(options_.request_timeout_s) + std::chrono::seconds(1);
  while (!request->wait_for(kFailurePoll)) {
    // Lost peers are noticed by heartbeats, not by the transport.
    if (auto failure = client_->failure()) {
      scheduler_->abandon(*failure);
      throw *failure;
    }
    if (std::chrono::steady_clock::now() - scheduler_->last_progress() > patience) {
      const Error timeout(ErrorCode::kTimedOut, "no reply from the servers within " +
                                                    ps::seconds_text(options_.request_timeout_s));
      scheduler_->abandon(timeout);
      throw timeout;
    }
  }
}

void DistKVStore::wait_request(const std::shared_ptr<Completion>& request) {
  if (!request) throw Error(ErrorCode::kInvalidArgument, "wait: no request");
  await(request);
  const auto error = request->error();
  if (!error) return;
  scheduler_->reported(request);
  report(*error);
}

void DistKVStore::wait_outstanding() {
  const std::vector<std::shared_ptr<Completion>> requests = scheduler_->take_outstanding();
  // Every request is waited for before the first error is thrown: the
  // caller may reuse its arrays once this returns or throws.
  std::optional<Error> first;
  for (const auto& request : requests) {
    try {
      wait_request(request);
    } catch (const Error& e) {
      if (!first) first = e;
      if (client_->failure()) break;  // abandoned: nothing touches caller memory any more
    }
  }
  if (first) throw *first;
}

void DistKVStore::wait(const std::shared_ptr<Completion>& request) { wait_request(request); }

void DistKVStore::wait_all() {
  wait_outstanding();
  throw_unreported();
}

// ---- the calls ----------------------------------------------------------------

void DistKVStore::init(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  check_lengths(keys.size(), values.size(), "init", "values");
  std::shared_ptr<Completion> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    throw_unreported();
    client_->check();
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys_.count(keys[i]) > 0) {
        throw Error(ErrorCode::kBadState, "init: key " + std::to_string(keys[i]) + " is already initialised");
      }
      if (!values[i].defined()) throw Error(ErrorCode::kInvalidArgument, "init: value " + std::to_string(i) + " is empty");
      if (values[i].size() == 0) {
        throw Error(ErrorCode::kInvalidArgument, "init: key " + std::to_string(keys[i]) + " has no elements");
      }
      for (size_t j = 0; j < i; ++j) {
        if (keys[j] == keys[i]) throw Error(ErrorCode::kInvalidArgument, "init: key " + std::to_string(keys[i]) + " repeats");
      }
    }
    RequestScheduler::Work work;
    std::vector<KeyMeta*> metas;
    for (size_t i = 0; i < keys.size(); ++i) {
      // A joined worker's rounds on every key go on from the job's.
      KeyMeta m{values[i].dtype(), values[i].shape(), {}, rounds_before_joining_, {}, {}};
      m.buffers.host = NDArray::empty(cpu_, values[i].dtype(), values[i].shape());
      m.parts = placement_.place(keys[i], static_cast<int64_t>(values[i].size()), core::dtype_size(values[i].dtype()));
      m.buffers.host.copy_from(values[i]);
      KeyMeta& stored = keys_.emplace(keys[i], std::move(m)).first->second;
      metas.push_back(&stored);
      for (const ps::PartRange& part : stored.parts) {
        work.emplace_back(DataOp::Init, RequestScheduler::Part{keys[i], stored.dtype, &stored.shape, part, -1,
                                                               static_cast<const uint8_t*>(stored.buffers.host.data()),
                                                               nullptr});
      }
    }
    // Before anything else on these keys, whatever its priority.
    done = scheduler_->submit(work, std::numeric_limits<int>::max(), nullptr);
    for (KeyMeta* m : metas) m->last = done;
  }
  wait_request(done);
}

std::shared_ptr<Completion> DistKVStore::issue(DataOp op, const std::vector<Key>& keys,
                                               const std::vector<NDArray>& values, const std::vector<NDArray>* outs,
                                               int priority) {
  const char* name = op == DataOp::Pull ? "pull" : op == DataOp::Push ? "push" : "pushpull";
  check_lengths(keys.size(), op == DataOp::Pull ? outs->size() : values.size(), name,
                op == DataOp::Pull ? "outputs" : "values");
  if (outs) check_lengths(keys.size(), outs->size(), name, "outputs");
  std::lock_guard<std::mutex> lock(mutex_);
  throw_unreported();
  client_->check();
  const auto groups = group_keys(keys);
  for (const KeyGroup& group : groups) {
    const KeyMeta& m = meta(group.key, name);
    for (size_t pos : group.positions) {
      if (op != DataOp::Pull) check_value(group.key, m.dtype, m.shape, values[pos], "push");
      if (outs) check_value(group.key, m.dtype, m.shape, (*outs)[pos], "pull");
    }
  }
  // A key's previous request must be done: its staging buffer is reused and
  // its round must reach the servers first.
  for (const KeyGroup& group : groups) {
    KeyMeta& m = keys_.at(group.key);
    // Its error, if any, stays its own: its wait or the next call reports it.
    if (m.last) await(m.last);
  }
  RequestScheduler::Work work;
  std::vector<Spread> spreads;
  for (const KeyGroup& group : groups) {
    KeyMeta& m = keys_.at(group.key);
    const uint8_t* src = nullptr;
    if (op != DataOp::Pull) {
      pushed_ = true;
      src = merge_->push_source(m.buffers, values, group.positions);
      if (sync_) ++m.pushes;
    }
    uint8_t* dst = nullptr;
    if (outs) {
      Spread spread{&m.buffers, {}};
      for (size_t pos : group.positions) spread.outs.push_back((*outs)[pos]);
      // dst may alias src (the trainer pushpulls gradients in place): each
      // part is encoded before its request leaves and written back only by
      // its own reply, and parts do not overlap.
      dst = WorkerMerge::pull_target(m.buffers, spread.outs);
      spreads.push_back(std::move(spread));
    }
    const int64_t round = sync_ ? m.pushes : -1;
    const bool with_numbers = sync_ && src && has_optimizer_ && member_->rank() == 0;
    for (const ps::PartRange& part : m.parts) {
      // A dist_sync pushpull may become a push and a pull of its round: see
      // RequestScheduler::submit().
      work.emplace_back(op, RequestScheduler::Part{group.key, m.dtype, &m.shape, part, round, src, dst,
                                                   with_numbers ? numbers_ : optim::UpdateNumbers{}});
    }
  }
  auto done = scheduler_->submit(work, priority, [merge = merge_.get(), spreads = std::move(spreads)] {
    for (const Spread& spread : spreads) merge->spread(*spread.buffers, spread.outs);
  });
  for (const KeyGroup& group : groups) keys_.at(group.key).last = done;
  return done;
}

std::shared_ptr<Completion> DistKVStore::push_async(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                                                    int priority) {
  return issue(DataOp::Push, keys, values, nullptr, priority);
}

std::shared_ptr<Completion> DistKVStore::pull_async(const std::vector<Key>& keys, const std::vector<NDArray>& outs,
                                                    int priority) {
  return issue(DataOp::Pull, keys, {}, &outs, priority);
}

std::shared_ptr<Completion> DistKVStore::pushpull_async(const std::vector<Key>& keys,
                                                        const std::vector<NDArray>& values,
                                                        const std::vector<NDArray>& outs, int priority) {
  return issue(DataOp::PushPull, keys, values, &outs, priority);
}

void DistKVStore::push(const std::vector<Key>& keys, const std::vector<NDArray>& values, int priority) {
  wait_request(push_async(keys, values, priority));
}

void DistKVStore::pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs, int priority) {
  wait_request(pull_async(keys, outs, priority));
}

void DistKVStore::pushpull(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                           const std::vector<NDArray>& outs, int priority) {
  wait_request(pushpull_async(keys, values, outs, priority));
}

void DistKVStore::set_optimizer(const optim::OptimizerConfig& config) {
  config.validate();
  std::lock_guard<std::mutex> lock(mutex_);
  // A joined worker takes the job's optimizer as the servers run it, state
  // and all: sent again by a joined worker 0, a description that differs
  // (a learning rate its schedule moved since, say) would replace it and
  // drop the state; from another worker it would be refused.
  if (!joined_running_job()) broadcast_command(DataOp::SetOptimizer, config.to_json(), 0);
  has_optimizer_ = true;
  numbers_ = {};  // the description's own rate and rescale, until set again
}

bool DistKVStore::has_optimizer() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return has_optimizer_;
}

// Worker 0 owns the servers' optimizer settings (servers refuse them from
// anyone else): every worker calls these at the same points of its program,
// and dist_sync applies a round only once worker 0's push of it arrived,
// which follows its setting.
void DistKVStore::set_learning_rate(double lr) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) throw Error(ErrorCode::kBadState, "set_learning_rate: the kvstore has no optimizer");
  optim::Optimizer::check_learning_rate(lr, "set_learning_rate");
  if (member_->rank() == 0) broadcast_command(DataOp::SetLearningRate, {}, lr);
  numbers_.learning_rate = lr;
}

void DistKVStore::set_rescale_grad(double rescale) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) throw Error(ErrorCode::kBadState, "set_rescale_grad: the kvstore has no optimizer");
  optim::Optimizer::check_rescale_grad(rescale, "set_rescale_grad");
  if (member_->rank() == 0) broadcast_command(DataOp::SetRescaleGrad, {}, rescale);
  numbers_.rescale_grad = rescale;
}

void DistKVStore::set_gradient_compression(const std::string& spec) {
  const ps::compression::CompressionConfig config = ps::compression::CompressionConfig::parse(spec);
  std::lock_guard<std::mutex> lock(mutex_);
  if (pushed_) {
    throw Error(ErrorCode::kBadState, "set_gradient_compression: this store has pushed already; set it before "
                                      "the first push, on every worker");
  }
  broadcast_command(DataOp::SetGradientCompression, config.to_string(), 0);
  scheduler_->set_compression(config);
  compression_ = config.to_string();
}

std::string DistKVStore::gradient_compression() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return compression_;
}

void DistKVStore::barrier() {
  client_->check();
  member_->barrier();
}

core::NamedArrays DistKVStore::optimizer_state(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) return {};
  client_->check();
  std::vector<ServerStateArrays> replies(static_cast<size_t>(client_->num_servers()));
  // With replicas, a part's state comes from both of its servers, the same
  // bytes twice.
  servers_->run(
      [&](int) { return ps::encode_get_optimizer_state(member_->rank()); },
      [&](int server, const ps::Frame& reply) { replies[static_cast<size_t>(server)] = read_state_reply(reply, cpu_); });
  const KeyLookup key_of = [this](Key key) {
    const KeyMeta& m = keys_.at(key);
    return PlacedKey{m.shape, m.parts};
  };
  return assemble_optimizer_state(replies, key_of, prefix, cpu_);
}

void DistKVStore::load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) throw Error(ErrorCode::kBadState, "load_optimizer_state: the kvstore has no optimizer");
  throw_unreported();
  wait_outstanding();
  client_->check();
  const KeyLookup key_of = [this](Key key) {
    const KeyMeta& m = meta(key, "load_optimizer_state");
    return PlacedKey{m.shape, m.parts};
  };
  const std::vector<ServerStateArrays> per_server =
      split_optimizer_state(arrays, prefix, client_->num_servers(), key_of,
                            [this](int server) { return scheduler_->holders(server); }, cpu_);
  // Rank 0's state is the one kept (as its init values are), and the barrier
  // keeps every worker's first push behind it: a push applied before the
  // load would be overwritten.
  if (member_->rank() == 0) {
    servers_->run(
        [&](int s) { return encode_state_request(member_->rank(), per_server[static_cast<size_t>(s)]); },
        [](int, const ps::Frame&) {});
  }
  member_->barrier();
}

core::Traffic DistKVStore::traffic() const { return client_->traffic(); }

}  // namespace dt::kvstore
