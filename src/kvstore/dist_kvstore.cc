#include "kvstore/dist_kvstore.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "kvstore/argument_checks.h"
#include "ps/data_codec.h"
#include "ps/server_node.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using core::NDArray;
using ps::wire::DataOp;

namespace {

// Tensor bytes per message: big enough to amortise the per-message cost,
// small enough that parts pipeline and no buffer hits glibc's mmap path.
constexpr size_t kBatchBytes = ps::KeyPlacement::kDefaultPartBytes;
// Requests up to this size are encoded and sent by the calling thread.
constexpr size_t kSendHereBytes = size_t{1} << 20;
// How often waits and the communication thread look for a lost peer.
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

ps::JobConfig worker_job(const ps::JobConfig& job) {
  if (job.role != ps::Role::kWorker) {
    throw Error(ErrorCode::kInvalidArgument, std::string("a dist kvstore is created by workers; this process is a ") +
                                                 ps::role_name(job.role) + " (DMLC_ROLE): run it with dt_node_run");
  }
  return job;
}

}  // namespace

// Everything one issued request is waiting for.
struct DistKVStore::Request {
  std::shared_ptr<Completion> completion = std::make_shared<Completion>();
  size_t units = 0;                  // queued units (a split pushpull part is two)
  std::atomic<size_t> remaining{0};  // units not yet answered
  std::vector<Spread> spreads;
  std::mutex mutex;
  std::optional<Error> error;  // the first failure among its items
};

DistKVStore::DistKVStore(const std::string& type, const ps::JobConfig& job, const ps::PsOptions& options,
                         ps::DataTransport transport, int max_in_flight_per_server,
                         std::unique_ptr<WorkerMerge> merge)
    : type_(checked_type(type)),
      sync_(type_.rfind("dist_sync", 0) == 0),
      merge_(checked_merge(type_, std::move(merge))),
      options_(options),
      cpu_(core::make_cpu_context()),
      member_(std::make_unique<ps::ClusterMember>(worker_job(job), options)),
      client_(std::make_unique<ps::WorkerClient>(member_->table(), job.node_host, transport, options)),
      placement_(member_->table().num_servers, options.bigarray_bound_bytes) {
  // The servers have a slot for every message in flight (server_concurrency).
  if (max_in_flight_per_server < 0 || max_in_flight_per_server > ps::kLaneWindow) {
    throw Error(ErrorCode::kInvalidArgument, "max_in_flight_per_server must be 0 (automatic) to " +
                                                 std::to_string(ps::kLaneWindow));
  }
  window_ = max_in_flight_per_server > 0 ? max_in_flight_per_server : ps::kLaneWindow;
  ps::WorkerClient* client = client_.get();
  member_->on_lost([client](const ps::LostNode& lost) { client->fail(Error(ErrorCode::kPeerLost, lost.message())); });
  lanes_.resize(2 * static_cast<size_t>(client_->num_servers()));
  last_progress_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { communicate(); });
}

DistKVStore::~DistKVStore() {
  {
    std::lock_guard<std::mutex> lock(dispatch_mutex_);
    stop_ = true;
  }
  dispatch_cv_.notify_all();
  thread_.join();
  const Error closed(ErrorCode::kClosed, "the kvstore was freed before the request was sent");
  std::vector<std::shared_ptr<Request>> dropped;
  {
    std::lock_guard<std::mutex> lock(dispatch_mutex_);
    for (Lane& lane : lanes_) {
      for (auto& [order, unit] : lane.queued) dropped.push_back(unit.request);
      lane.queued.clear();
    }
  }
  for (const auto& request : dropped) finish_unit(request, closed);
  // The member skips its goodbye to the scheduler once any peer is known
  // lost (the job is over); a failure only the data path saw counts too.
  const bool failed = client_->failure().has_value();
  // Closing the connections answers every message in flight (kClosed) and
  // waits for their handlers, which touch this object.
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
  ps::WorkerClient::Exchange exchange(*client_, [](size_t, const ps::Frame&) {});
  for (int s = 0; s < client_->num_servers(); ++s) {
    exchange.send(s, ps::encode_data_request(op, member_->rank(), {}, text, number).message);
  }
  exchange.wait();
}

// ---- the communication thread ---------------------------------------------

void DistKVStore::communicate() {
  std::unique_lock<std::mutex> lock(dispatch_mutex_);
  size_t first = 0;  // rotates, so no server is always served last
  while (!stop_) {
    if (auto failure = client_->failure()) {
      // A lost peer: nothing queued will ever be answered.
      std::vector<std::shared_ptr<Request>> dropped;
      for (Lane& lane : lanes_) {
        for (auto& [order, unit] : lane.queued) dropped.push_back(unit.request);
        lane.queued.clear();
      }
      lock.unlock();
      for (const auto& request : dropped) finish_unit(request, failure);
      lock.lock();
    }
    std::vector<std::pair<int, std::vector<Unit>>> batches;  // (lane, units)
    for (size_t i = 0; i < lanes_.size(); ++i) {
      const size_t l = (first + i) % lanes_.size();
      Lane& lane = lanes_[l];
      while (lane.in_flight < window_ && !lane.queued.empty()) {
        batches.emplace_back(static_cast<int>(l), take_batch(lane));
        ++lane.in_flight;
      }
    }
    first = (first + 1) % std::max<size_t>(1, lanes_.size());
    if (batches.empty()) {
      // Woken by new requests and replies; the timeout only rechecks for a
      // lost peer, which nobody signals here.
      dispatch_cv_.wait_for(lock, kFailurePoll);
      continue;
    }
    lock.unlock();
    for (auto& [lane, units] : batches) send_batch(lane, std::move(units));
    lock.lock();
  }
}

std::vector<DistKVStore::Unit> DistKVStore::take_batch(Lane& lane) {
  // The most urgent unit, then the next ones of the same op in priority
  // order while they fit: small keys share a message.
  std::vector<Unit> units;
  size_t bytes = 0;
  const DataOp op = lane.queued.begin()->second.op;
  for (auto it = lane.queued.begin(); it != lane.queued.end();) {
    const Item& item = it->second.item;
    const size_t size = static_cast<size_t>(item.part.end - item.part.begin) * core::dtype_size(item.meta->dtype);
    if (it->second.op != op || (!units.empty() && bytes + size > kBatchBytes)) {
      ++it;
      continue;
    }
    bytes += size;
    units.push_back(std::move(it->second));
    it = lane.queued.erase(it);
    if (bytes >= kBatchBytes) break;
  }
  return units;
}

void DistKVStore::send_batch(int lane, std::vector<Unit> units) {
  const int server = lane / 2;
  const DataOp op = units.front().op;
  std::vector<ps::SliceSpec> specs;
  specs.reserve(units.size());
  for (const Unit& unit : units) {
    const Item& item = unit.item;
    ps::PartInfo info{ps::PartKey{item.key, item.part.begin, item.part.end}, item.meta->dtype, item.meta->shape};
    specs.push_back(ps::SliceSpec{info, item.round, item.src ? ps::part_bytes(info) : 0});
  }
  std::optional<ps::EncodedData> encoded;
  std::optional<Error> error;
  try {
    // Servers know the two modes; a "_device" type differs only on the worker.
    encoded.emplace(ps::encode_data_request(op, member_->rank(), specs,
                                            op == DataOp::Init ? (sync_ ? "dist_sync" : "dist_async") : std::string()));
    std::shared_lock<std::shared_mutex> memory(memory_mutex_);
    if (memory_released_) throw Error(ErrorCode::kClosed, "the request was abandoned before it was sent");
    for (size_t j = 0; j < units.size(); ++j) {
      const Item& item = units[j].item;
      if (item.src == nullptr) continue;
      std::memcpy(encoded->slice_data[j],
                  item.src + static_cast<size_t>(item.part.begin) * core::dtype_size(item.meta->dtype),
                  specs[j].data_bytes);
    }
  } catch (const Error& e) {
    error = e;
  } catch (const std::bad_alloc&) {
    error = Error(ErrorCode::kOutOfMemory, "out of memory encoding a request");
  }
  auto shared = std::make_shared<std::vector<Unit>>(std::move(units));
  if (error) {
    on_reply(lane, *shared, error, nullptr);
    return;
  }
  client_->send(server, std::move(encoded->message),
                [this, lane, shared](std::optional<Error> e, const ps::Frame* reply) {
                  on_reply(lane, *shared, std::move(e), reply);
                });
}

void DistKVStore::on_reply(int lane, const std::vector<Unit>& units, std::optional<Error> error,
                           const ps::Frame* reply) {
  const DataOp op = units.front().op;
  if (!error && (op == DataOp::Pull || op == DataOp::PushPull)) {
    try {
      const auto* slices = reply->expect<ps::wire::DataReply>().slices();
      if (slices == nullptr || slices->size() != units.size()) {
        throw Error(ErrorCode::kProtocol, "a server answered " + std::to_string(slices ? slices->size() : 0) +
                                              " slices to a pull of " + std::to_string(units.size()));
      }
      std::shared_lock<std::shared_mutex> memory(memory_mutex_);
      if (memory_released_) throw Error(ErrorCode::kClosed, "the request was abandoned");
      for (size_t j = 0; j < units.size(); ++j) {
        const Item& item = units[j].item;
        const ps::DecodedSlice s = ps::decode_slice(*reply, slices->Get(static_cast<flatbuffers::uoffset_t>(j)));
        if (s.info.part.key != item.key || s.info.part.begin != item.part.begin ||
            s.info.part.end != item.part.end || s.data == nullptr) {
          throw Error(ErrorCode::kProtocol, "a server answered a pull of key " + std::to_string(item.key) +
                                                " with another part");
        }
        std::memcpy(item.dst + static_cast<size_t>(item.part.begin) * core::dtype_size(item.meta->dtype), s.data,
                    s.data_bytes);
      }
    } catch (const Error& e) {
      error = e;
    }
  }
  bool waiting;  // whether the lane has queued messages the freed slot lets go
  {
    std::lock_guard<std::mutex> lock(dispatch_mutex_);
    Lane& l = lanes_[static_cast<size_t>(lane)];
    --l.in_flight;
    waiting = !l.queued.empty();
    last_progress_ = std::chrono::steady_clock::now();
  }
  if (waiting) dispatch_cv_.notify_all();
  for (const Unit& unit : units) finish_unit(unit.request, error);
}

void DistKVStore::finish_unit(const std::shared_ptr<Request>& request, const std::optional<Error>& error) {
  if (error) {
    std::lock_guard<std::mutex> lock(request->mutex);
    if (!request->error) request->error = error;
  }
  if (request->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::optional<Error> outcome;
  {
    std::lock_guard<std::mutex> lock(request->mutex);
    outcome = request->error;
  }
  if (!outcome) {
    try {
      std::shared_lock<std::shared_mutex> memory(memory_mutex_);
      if (memory_released_) throw Error(ErrorCode::kClosed, "the request was abandoned");
      for (const Spread& spread : request->spreads) merge_->spread(*spread.buffers, spread.outs);
    } catch (const Error& e) {
      outcome = e;
    }
  }
  request->spreads.clear();
  if (outcome) {
    std::lock_guard<std::mutex> lock(dispatch_mutex_);
    if (!unreported_) unreported_ = request->completion;
  }
  request->completion->finish(outcome);
}

std::shared_ptr<Completion> DistKVStore::enqueue(const std::vector<std::pair<DataOp, Item>>& work, int priority,
                                                 std::vector<Spread> spreads) {
  auto request = std::make_shared<Request>();
  request->spreads = std::move(spreads);
  std::vector<std::pair<int, std::vector<Unit>>> batches;  // (lane, units) this thread sends
  bool wake = false;                                       // whether the communication thread sends
  {
    std::lock_guard<std::mutex> lock(dispatch_mutex_);
    // A dist_sync pushpull's pull waits on the server for the other
    // workers' pushes, and in one message its push would wait with it: two
    // workers whose windows fill with such messages, each waiting for keys
    // the other still has queued, would wait for each other forever. So per
    // server it leaves as one message only when that message is sent right
    // now, here, and nothing is queued for the server (the latency case: a
    // small synchronous call, or a step's first small request); otherwise as a push
    // and a pull of the same round, the push in the lane that never waits.
    // A fused message is in flight from the start, so its push reaches the
    // server like any other; only queued messages can be kept waiting.
    size_t request_bytes = 0;
    for (const auto& [op, item] : work) {
      request_bytes += static_cast<size_t>(item.part.end - item.part.begin) * core::dtype_size(item.meta->dtype);
    }
    // A small request leaves from this thread (see below); a big one from
    // the communication thread.
    const bool send_here = request_bytes <= kSendHereBytes;
    auto fuse = [&](size_t server) {
      const Lane& pushes = lanes_[2 * server];
      const Lane& pulls = lanes_[2 * server + 1];
      return send_here && pushes.queued.empty() && pulls.queued.empty() && pulls.in_flight < window_;
    };
    std::vector<int> fused(lanes_.size() / 2, -1);  // per server: unknown, no, yes
    std::vector<bool> touched(lanes_.size(), false);
    auto place = [&](DataOp op, const Item& item, bool waits) {
      // Pulls that wait for a round have their own lane: they never keep
      // the pushes that complete rounds from leaving.
      const size_t lane = 2 * static_cast<size_t>(item.part.server) + (waits ? 1 : 0);
      lanes_.at(lane).queued.emplace(std::make_pair(-static_cast<int64_t>(priority), next_sequence_++),
                                     Unit{request, op, item});
      touched[lane] = true;
      ++request->units;
    };
    for (const auto& [op, item] : work) {
      const size_t server = static_cast<size_t>(item.part.server);
      if (sync_ && op == DataOp::PushPull) {
        if (fused[server] < 0) fused[server] = fuse(server) ? 1 : 0;
        if (fused[server] == 1) {
          place(op, item, true);
        } else {
          place(DataOp::Push, Item{item.meta, item.key, item.part, item.round, item.src, nullptr}, false);
          place(DataOp::Pull, Item{item.meta, item.key, item.part, item.round, nullptr, item.dst}, true);
        }
      } else {
        place(op, item, op == DataOp::Pull);
      }
    }
    request->remaining = request->units + 1;  // + 1: the items cannot finish it while being queued
    // For a small request, what the windows allow leaves from this thread:
    // waking the communication thread costs a context switch, the largest
    // part of a small request's latency. Fused messages always leave here
    // (fuse() checked the window). A big request's encoding (copying
    // megabytes) stays off the caller's thread, which in overlapped training
    // is running backward; and its fresh multi-megabyte messages, allocated
    // in the communication thread's malloc arena, are reused there instead
    // of being faulted in again each time from the main arena (measured:
    // 16 MiB pushes 15-40% slower when encoded here).
    for (size_t lane = 0; lane < lanes_.size() && send_here; ++lane) {
      Lane& l = lanes_[lane];
      while (touched[lane] && l.in_flight < window_ && !l.queued.empty()) {
        batches.emplace_back(static_cast<int>(lane), take_batch(l));
        ++l.in_flight;
      }
    }
    wake = !send_here;
    if (outstanding_.size() > 64) {
      outstanding_.erase(std::remove_if(outstanding_.begin(), outstanding_.end(),
                                        [](const std::shared_ptr<Completion>& c) { return c->done(); }),
                         outstanding_.end());
    }
    outstanding_.push_back(request->completion);
    // Progress is measured from the latest reply or request: a request
    // queued behind a long backlog must not time out while others move.
    last_progress_ = std::chrono::steady_clock::now();
  }
  if (wake) dispatch_cv_.notify_all();
  for (auto& [lane, units] : batches) send_batch(lane, std::move(units));
  // Whatever did not fit the windows leaves from the communication thread
  // as replies make room; it is woken then (on_reply).
  finish_unit(request, std::nullopt);
  return request->completion;
}

// ---- waiting ----------------------------------------------------------------

void DistKVStore::abandon(const Error& error) {
  client_->fail(error);
  {
    std::unique_lock<std::shared_mutex> memory(memory_mutex_);
    memory_released_ = true;
  }
  dispatch_cv_.notify_all();
}

void DistKVStore::throw_unreported() {
  std::shared_ptr<Completion> failed;
  {
    std::lock_guard<std::mutex> lock(dispatch_mutex_);
    failed.swap(unreported_);
  }
  if (failed) {
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
      abandon(*failure);
      throw *failure;
    }
    std::chrono::steady_clock::time_point progress;
    {
      std::lock_guard<std::mutex> lock(dispatch_mutex_);
      progress = last_progress_;
    }
    if (std::chrono::steady_clock::now() - progress > patience) {
      const Error timeout(ErrorCode::kTimedOut, "no reply from the servers within " +
                                                    ps::seconds_text(options_.request_timeout_s));
      abandon(timeout);
      throw timeout;
    }
  }
}

void DistKVStore::wait_request(const std::shared_ptr<Completion>& request) {
  if (!request) throw Error(ErrorCode::kInvalidArgument, "wait: no request");
  await(request);
  const auto error = request->error();
  if (!error) return;
  {
    std::lock_guard<std::mutex> lock(dispatch_mutex_);
    if (unreported_ == request) unreported_.reset();
  }
  report(*error);
}

void DistKVStore::wait_outstanding() {
  std::vector<std::shared_ptr<Completion>> requests;
  {
    std::lock_guard<std::mutex> lock(dispatch_mutex_);
    requests.swap(outstanding_);
  }
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
    std::vector<std::pair<DataOp, Item>> items;
    std::vector<KeyMeta*> metas;
    for (size_t i = 0; i < keys.size(); ++i) {
      KeyMeta m{values[i].dtype(), values[i].shape(), {}, 0, {}, {}};
      m.buffers.host = NDArray::empty(cpu_, values[i].dtype(), values[i].shape());
      m.parts = placement_.place(keys[i], static_cast<int64_t>(values[i].size()), core::dtype_size(values[i].dtype()));
      m.buffers.host.copy_from(values[i]);
      KeyMeta& stored = keys_.emplace(keys[i], std::move(m)).first->second;
      metas.push_back(&stored);
      for (const ps::PartRange& part : stored.parts) {
        items.emplace_back(DataOp::Init,
                           Item{&stored, keys[i], part, -1, static_cast<const uint8_t*>(stored.buffers.host.data()), nullptr});
      }
    }
    // Before anything else on these keys, whatever its priority.
    done = enqueue(items, std::numeric_limits<int>::max(), {});
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
  std::vector<std::pair<DataOp, Item>> work;
  std::vector<Spread> spreads;
  for (const KeyGroup& group : groups) {
    KeyMeta& m = keys_.at(group.key);
    const uint8_t* src = nullptr;
    if (op != DataOp::Pull) {
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
    for (const ps::PartRange& part : m.parts) {
      // A dist_sync pushpull may become a push and a pull of its round: see
      // enqueue().
      work.emplace_back(op, Item{&m, group.key, part, round, src, dst});
    }
  }
  auto done = enqueue(work, priority, std::move(spreads));
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
  broadcast_command(DataOp::SetOptimizer, config.to_json(), 0);
  has_optimizer_ = true;
}

bool DistKVStore::has_optimizer() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return has_optimizer_;
}

void DistKVStore::set_learning_rate(double lr) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) throw Error(ErrorCode::kBadState, "set_learning_rate: the kvstore has no optimizer");
  broadcast_command(DataOp::SetLearningRate, {}, lr);
}

void DistKVStore::set_rescale_grad(double rescale) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) throw Error(ErrorCode::kBadState, "set_rescale_grad: the kvstore has no optimizer");
  broadcast_command(DataOp::SetRescaleGrad, {}, rescale);
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
    ps::WorkerClient::Exchange exchange(*client_, [&](size_t index, const ps::Frame& reply) {
      const auto& data = reply.expect<ps::wire::DataReply>();
      const std::string names = data.message() ? data.message()->str() : "";
      const size_t count = data.slices() ? data.slices()->size() : 0;
      size_t start = 0;
      for (size_t i = 0; i < count; ++i) {
        const size_t end = std::min(names.find('\n', start), names.size());
        const ps::DecodedSlice s = ps::decode_slice(reply, data.slices()->Get(static_cast<flatbuffers::uoffset_t>(i)));
        NDArray copy = NDArray::empty(cpu_, s.info.dtype, s.info.shape);
        copy.copy_from_host(s.data, s.data_bytes);
        replies[index].emplace_back(names.substr(start, end - start), copy);
        start = end + 1;
      }
    });
    for (int s = 0; s < client_->num_servers(); ++s) {
      exchange.send(s, ps::encode_data_request(DataOp::GetOptimizerState, member_->rank(), {}).message);
    }
    exchange.wait();
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
      const size_t slash1 = name.find('/'), slash2 = name.find('/', slash1 + 1), dot = name.find('.');
      if (slash1 == std::string::npos || slash2 == std::string::npos || dot == std::string::npos) {
        throw Error(ErrorCode::kProtocol, "a server reported optimizer state '" + name + "'");
      }
      const Key key = std::stoull(name.substr(0, slash1));
      const int64_t begin = std::stoll(name.substr(slash1 + 1, slash2 - slash1 - 1));
      const std::string slot = name.substr(dot + 1);
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
    const size_t dot = rest.find('.');
    const std::string key_text = rest.substr(0, dot);
    if (dot == std::string::npos || key_text.empty() || key_text.size() > 20 ||
        key_text.find_first_not_of("0123456789") != std::string::npos) {
      throw Error(ErrorCode::kInvalidArgument, "load_optimizer_state: '" + name +
                                                   "' is not <key>.<slot>, num_update or learning_rate");
    }
    const Key key = std::stoull(key_text);
    const std::string slot = rest.substr(dot);  // with its dot
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
      const std::string part_name = key_text + "/" + std::to_string(part.begin) + "/" + std::to_string(part.end) + slot;
      if (!per_part) {
        per_server[static_cast<size_t>(part.server)].emplace_back(part_name, host);
        continue;
      }
      NDArray piece = NDArray::empty(cpu_, array.dtype(), core::Shape({part.end - part.begin}));
      piece.copy_from_host(static_cast<const uint8_t*>(host.data()) + static_cast<size_t>(part.begin) * element,
                           piece.nbytes());
      per_server[static_cast<size_t>(part.server)].emplace_back(part_name, piece);
    }
  }
  // Rank 0's state is the one kept (as its init values are), and the barrier
  // keeps every worker's first push behind it: a push applied before the
  // load would be overwritten.
  if (member_->rank() == 0) {
    ps::WorkerClient::Exchange exchange(*client_, [](size_t, const ps::Frame&) {});
    for (int s = 0; s < client_->num_servers(); ++s) {
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
      exchange.send(s, std::move(encoded.message));
    }
    exchange.wait();
  }
  member_->barrier();
}

}  // namespace dt::kvstore
