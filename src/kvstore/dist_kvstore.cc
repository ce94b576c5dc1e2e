#include "kvstore/dist_kvstore.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "core/error.h"
#include "kvstore/argument_checks.h"
#include "optim/optimizer.h"
#include "optim/state_name.h"
#include "ps/transport/data_codec.h"

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
std::unique_ptr<WorkerMerge> checked_merge(const std::string& type, std::unique_ptr<WorkerMerge> merge) {
  if (!merge) merge = WorkerMerge::on_host();
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

struct DistKVStore::ClientForCallbacks {
  std::mutex mutex;
  ps::WorkerClient* client = nullptr;  // null once the store closed it

  void fail(const Error& error) {
    std::lock_guard<std::mutex> lock(mutex);
    if (client != nullptr) client->fail(error);
  }
  // Before the client is destroyed: a callback under way ends first.
  void forget() {
    std::lock_guard<std::mutex> lock(mutex);
    client = nullptr;
  }
};

DistKVStore::DistKVStore(const std::string& type, const ps::JobConfig& job, const ps::PsOptions& options,
                         ps::DataTransport transport, int max_in_flight_per_server,
                         std::unique_ptr<WorkerMerge> merge)
    : type_(checked_type(type)),
      sync_(type_.rfind("dist_sync", 0) == 0),
      merge_(checked_merge(type_, std::move(merge))),
      options_(options),
      cpu_(core::make_cpu_context()),
      member_(std::make_unique<ps::ClusterMember>(worker_job(job, type_), options)),
      client_(std::make_unique<ps::WorkerClient>(member_->table(), job.node_host, transport, options, job.security)),
      placement_(member_->table().num_servers, options.bigarray_bound_bytes) {
  scheduler_ = std::make_unique<RequestScheduler>(RequestScheduler::link_to(*client_), member_->rank(), sync_,
                                                  max_in_flight_per_server, options.server_replicas > 0,
                                                  // As report() waits for a lost peer's name.
                                                  ps::to_ms(2 * options.heartbeat_timeout_s));
  // A dropped connection to a replicated server: the verdict comes with the
  // next heartbeat reply, asked for at once.
  ps::ClusterMember* member = member_.get();
  scheduler_->on_suspected_loss([member] { member->ask_for_news(); });
  // Replicated: a server's connection that closes is most likely a lost
  // server. Every worker asks for news at once, not only those with a
  // request in flight to it: a new copy waits for every worker's push, and
  // a worker that learned of the loss only at its next heartbeat held the
  // others up until then (up to the heartbeat interval).
  if (scheduler_->replicated()) {
    const std::atomic<bool>* closing = &closing_;
    client_->on_disconnect([member, closing](int) {
      if (!closing->load()) member->ask_for_news();
    });
  }
  // The scheduler weighs a further server loss with the parts' new copies
  // once every worker has seen its own filled.
  scheduler_->on_copies_restored([member](uint32_t losses) { member->report_copies_restored(losses); });
  client_for_callbacks_ = std::make_shared<ClientForCallbacks>();
  client_for_callbacks_->client = client_.get();
  const std::shared_ptr<ClientForCallbacks> client = client_for_callbacks_;
  member_->on_lost([client](const ps::LostNode& lost) { client->fail(Error(ErrorCode::kPeerLost, lost.message())); });
  // A server the job goes on without, or one that rejoined in its place
  // (the scheduler's DT_SERVER_REPLICATION=1), in the order the scheduler
  // saw them: every node derives the parts' holders from that order.
  RequestScheduler* scheduler = scheduler_.get();
  member_->on_server_change([client, scheduler](const ps::ClusterMember::ServerNews& news) {
    if (!scheduler->replicated()) {
      const std::string what = news.change.rejoined ? news.rejoined.describe() + " rejoined the job"
                                                    : news.lost.message();
      client->fail(Error(ErrorCode::kPeerLost, what + " (the scheduler replicates servers, this worker does not: "
                                                      "DT_SERVER_REPLICATION differs between them)"));
      return;
    }
    if (news.change.rejoined) {
      std::fprintf(stderr,
                   "disttrain worker: %s rejoined the job; it takes new copies of the key parts left with one "
                   "holder, filled as they are pushed\n",
                   news.rejoined.describe().c_str());
      scheduler->server_rejoined(news.rejoined);
      return;
    }
    std::fprintf(stderr,
                 "disttrain worker: %s; its key parts are pulled from their other holders, and get new copies "
                 "where a server is left for them\n",
                 news.lost.message().c_str());
    scheduler->server_lost(news.lost.rank);
  });
  if (!member_->table().joined_running_job) return;
  try {
    join_running_job();
  } catch (...) {
    // No destructor runs: the client goes before the member's heartbeat
    // thread ends, as there.
    client_for_callbacks_->forget();
    throw;
  }
}

void DistKVStore::join_running_job() {
  // The job moves on while the question and the answer travel; a few tries
  // are plenty (one round of slack each), and each is bounded.
  constexpr int kAttempts = 8;
  const std::string pid = std::to_string(static_cast<long long>(::getpid()));
  for (int attempt = 1;; ++attempt) {
    std::mutex mutex;
    int64_t floor = 1;
    exchange_with_servers(
        [&](int) { return ps::encode_data_request(DataOp::Join, member_->rank(), {}, pid, -1).message; },
        [&](int, const ps::Frame& reply) {
          std::lock_guard<std::mutex> lock(mutex);
          floor = std::max(floor, reply.expect<ps::wire::DataReply>().round());
        });
    const int64_t round = floor + 1;
    try {
      exchange_with_servers(
          [&](int) {
            return ps::encode_data_request(DataOp::Join, member_->rank(), {}, pid, static_cast<double>(round)).message;
          },
          [](int, const ps::Frame&) {});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kBadState || attempt == kAttempts) throw;
      continue;
    }
    if (sync_) {
      rounds_before_joining_ = round - 1;
      std::fprintf(stderr, "disttrain worker %d: joined the running job; its pushes count from round %lld\n",
                   member_->rank(), static_cast<long long>(round));
    } else {
      std::fprintf(stderr, "disttrain worker %d: joined the running job (dist_async: its pushes apply as they come)\n",
                   member_->rank());
    }
    return;
  }
}

DistKVStore::~DistKVStore() {
  closing_ = true;  // servers closing their connections now are the job ending
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
  client_for_callbacks_->forget();
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
  exchange_with_servers([&](int) { return ps::encode_data_request(op, member_->rank(), {}, text, number).message; },
                        [](int, const ps::Frame&) {});
}

void DistKVStore::exchange_with_servers(const std::function<ps::Message(int server)>& request,
                                        const std::function<void(int server, const ps::Frame& reply)>& on_reply) const {
  std::vector<int> servers;  // the ones still to answer
  for (int s = 0; s < client_->num_servers(); ++s) {
    if (scheduler_->server_alive(s)) servers.push_back(s);
  }
  for (;;) {
    const auto answered = std::make_unique<std::atomic<bool>[]>(servers.size());
    std::vector<int> lost_before;
    for (int s : servers) lost_before.push_back(scheduler_->times_lost(s));
    try {
      ps::WorkerClient::Exchange exchange(*client_, [&](size_t index, const ps::Frame& reply) {
        on_reply(servers[index], reply);
        answered[index] = true;
      });
      for (size_t i = 0; i < servers.size(); ++i) exchange.send(servers[i], request(servers[i]));
      exchange.wait();
      return;
    } catch (const Error& e) {
      if (!scheduler_->replicated() || !lost_server_among(servers, lost_before, e)) throw;
    }
    // A server was lost meanwhile: again, to the others that did not answer.
    std::vector<int> left;
    for (size_t i = 0; i < servers.size(); ++i) {
      if (!answered[i] && scheduler_->server_alive(servers[i])) left.push_back(servers[i]);
    }
    if (left.empty()) return;
    servers.swap(left);
  }
}

bool DistKVStore::lost_server_among(const std::vector<int>& servers, const std::vector<int>& lost_before,
                                    const Error& error) const {
  if (error.code() != ErrorCode::kNetwork && error.code() != ErrorCode::kTimedOut &&
      error.code() != ErrorCode::kClosed && error.code() != ErrorCode::kPeerLost) {
    return false;
  }
  // The scheduler's verdict comes within the heartbeat timeout, as report() waits for it.
  const auto verdict = std::chrono::steady_clock::now() + ps::to_ms(2 * options_.heartbeat_timeout_s);
  for (;;) {
    if (auto failure = client_->failure()) throw *failure;
    for (size_t i = 0; i < servers.size(); ++i) {
      if (scheduler_->times_lost(servers[i]) > lost_before[i]) return true;
    }
    if (std::chrono::steady_clock::now() >= verdict) return false;
    std::this_thread::sleep_for(kFailurePoll);
  }
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
  // Per server, the names and copies of its arrays ("<key>/<begin>/<end>.<slot>").
  std::vector<std::vector<std::pair<std::string, NDArray>>> replies(static_cast<size_t>(client_->num_servers()));
  {
    // With replicas, a part's state comes from both of its servers, the
    // same bytes twice.
    const auto request = [&](int) { return ps::encode_data_request(DataOp::GetOptimizerState, member_->rank(), {}).message; };
    exchange_with_servers(request, [&](int server, const ps::Frame& reply) {
      const auto& data = reply.expect<ps::wire::DataReply>();
      const std::string names = data.message() ? data.message()->str() : "";
      const size_t count = data.slices() ? data.slices()->size() : 0;
      size_t start = 0;
      for (size_t i = 0; i < count; ++i) {
        const size_t end = std::min(names.find('\n', start), names.size());
        const ps::DecodedSlice s = ps::decode_slice(reply, data.slices()->Get(static_cast<flatbuffers::uoffset_t>(i)));
        NDArray copy = NDArray::empty(cpu_, s.info.dtype, s.info.shape);
        copy.copy_from_host(s.data, s.data_bytes);
        replies[static_cast<size_t>(server)].emplace_back(names.substr(start, end - start), copy);
        start = end + 1;
      }
    });
  }
  // Reassemble each key's slots from its parts, in ascending key order.
  int64_t num_update = 0;
  NDArray learning_rate;
  std::map<Key, std::map<std::string, NDArray>> per_key;
  for (const auto& list : replies) {
    for (const auto& [name, array] : list) {
      if (name == "num_update") {
        int64_t n = 0;
        array.copy_to_host(&n, sizeof(n));
        num_update = std::max(num_update, n);
        continue;
      }
      if (name == "learning_rate") {
        learning_rate = array;
        continue;
      }
      const auto parsed = optim::parse_state_name(name);
      if (!parsed || !parsed->per_part) {
        throw Error(ErrorCode::kProtocol, "a server reported optimizer state '" + name + "'");
      }
      const Key key = parsed->key;
      const int64_t begin = parsed->begin;
      const std::string& slot = parsed->slot;
      const KeyMeta& m = keys_.at(key);
      NDArray& full = per_key[key][slot];
      if (slot == "step") {
        full = array;
        continue;
      }
      if (!full.defined()) full = NDArray::empty(cpu_, array.dtype(), m.shape);
      const size_t element = core::dtype_size(array.dtype());
      std::memcpy(static_cast<uint8_t*>(full.data()) + static_cast<size_t>(begin) * element, array.data(),
                  array.nbytes());
    }
  }
  core::NamedArrays out;
  NDArray n = NDArray::empty(cpu_, core::DType::kInt64, core::Shape());
  n.copy_from_host(&num_update, sizeof(num_update));
  out.emplace_back(prefix + "num_update", n);
  if (learning_rate.defined()) out.emplace_back(prefix + "learning_rate", learning_rate);
  for (const auto& [key, slots] : per_key) {
    for (const auto& [slot, array] : slots) out.emplace_back(prefix + std::to_string(key) + "." + slot, array);
  }
  return out;
}

void DistKVStore::load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) throw Error(ErrorCode::kBadState, "load_optimizer_state: the kvstore has no optimizer");
  throw_unreported();
  wait_outstanding();
  client_->check();
  // Per server, what optimizer_state() would have read from it: the scalars
  // to every server, each key's slots cut into the parts that server holds.
  std::vector<std::vector<std::pair<std::string, NDArray>>> per_server(static_cast<size_t>(client_->num_servers()));
  for (const auto& [name, array] : arrays) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!array.defined()) throw Error(ErrorCode::kInvalidArgument, "load_optimizer_state: " + name + " is empty");
    const std::string rest = name.substr(prefix.size());
    if (rest == "num_update" || rest == "learning_rate") {
      for (auto& list : per_server) list.emplace_back(rest, array);
      continue;
    }
    const auto parsed = optim::parse_state_name(rest);
    if (!parsed || parsed->per_part) {
      throw Error(ErrorCode::kInvalidArgument, "load_optimizer_state: '" + name +
                                                   "' is not <key>.<slot>, num_update or learning_rate");
    }
    const Key key = parsed->key;
    const std::string key_text = std::to_string(key);
    const std::string slot = "." + parsed->slot;  // with its dot
    const KeyMeta& m = meta(key, "load_optimizer_state");
    const bool per_part = slot != ".step";
    if (per_part && static_cast<int64_t>(array.size()) != m.shape.numel()) {
      throw Error(ErrorCode::kShapeMismatch, "load_optimizer_state: " + name + " has " +
                                                 std::to_string(array.size()) + " elements, key " + key_text +
                                                 " holds " + std::to_string(m.shape.numel()));
    }
    NDArray host = array;
    if (!array.context()->is_cpu()) {
      host = NDArray::empty(cpu_, array.dtype(), array.shape());
      host.copy_from(array);
    }
    const size_t element = core::dtype_size(array.dtype());
    for (const ps::PartRange& part : m.parts) {
      const std::string part_name = optim::part_state_name(key, part.begin, part.end, parsed->slot);
      NDArray piece = host;
      if (per_part) {
        piece = NDArray::empty(cpu_, array.dtype(), core::Shape({part.end - part.begin}));
        piece.copy_from_host(static_cast<const uint8_t*>(host.data()) + static_cast<size_t>(part.begin) * element,
                             piece.nbytes());
      }
      // Every server holding the part keeps the same state.
      for (int holder : scheduler_->holders(part.server)) {
        per_server[static_cast<size_t>(holder)].emplace_back(part_name, piece);
      }
    }
  }
  // Rank 0's state is the one kept (as its init values are), and the barrier
  // keeps every worker's first push behind it: a push applied before the
  // load would be overwritten.
  if (member_->rank() == 0) {
    const auto request = [&](int s) {
      const auto& list = per_server[static_cast<size_t>(s)];
      std::vector<ps::SliceSpec> specs;
      std::string names;
      for (const auto& [part_name, array] : list) {
        specs.push_back(ps::SliceSpec{ps::PartInfo{ps::PartKey{0, 0, static_cast<int64_t>(array.size())},
                                                   array.dtype(), array.shape()},
                                      -1, array.nbytes()});
        names += (names.empty() ? "" : "\n") + part_name;
      }
      ps::EncodedData encoded = ps::encode_data_request(DataOp::SetOptimizerState, member_->rank(), specs, names);
      for (size_t i = 0; i < list.size(); ++i) {
        std::memcpy(encoded.slice_data[i], list[i].second.data(), specs[i].data_bytes);
      }
      return std::move(encoded.message);
    };
    exchange_with_servers(request, [](int, const ps::Frame&) {});
  }
  member_->barrier();
}

core::Traffic DistKVStore::traffic() const { return client_->traffic(); }

}  // namespace dt::kvstore
