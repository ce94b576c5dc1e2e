#include "kvstore/request_scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kvstore/lane_message.h"
#include "kvstore/lane_timeline.h"
#include "kvstore/worker_client_link.h"
#include "ps/transport/limits.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using ps::wire::DataOp;

namespace {

// Requests up to this size are encoded and sent by the submitting thread.
constexpr size_t kSendHereBytes = size_t{1} << 20;
// How often the communication thread looks for a lost peer, which nobody
// signals to it.
constexpr auto kFailurePoll = std::chrono::milliseconds(20);

int checked_window(int max_in_flight_per_server) {
  // The servers accept both lanes' windows from one connection (kRequestsPerWorker).
  if (max_in_flight_per_server < 0 || max_in_flight_per_server > ps::kLaneWindow) {
    throw Error(ErrorCode::kInvalidArgument, "max_in_flight_per_server must be 0 (automatic) to " +
                                                 std::to_string(ps::kLaneWindow));
  }
  return max_in_flight_per_server > 0 ? max_in_flight_per_server : ps::kLaneWindow;
}

// The replica router when replicated, else null.
std::unique_ptr<ReplicaRouter> checked_router(bool replicated, bool sync, int num_servers,
                                              std::chrono::milliseconds verdict_wait) {
  if (!replicated) return nullptr;
  // dist_async servers apply pushes in arrival order, which differs between
  // two servers: their copies would drift apart.
  if (!sync) {
    throw Error(ErrorCode::kInvalidArgument,
                "DT_SERVER_REPLICATION=1 needs dist_sync: a dist_async server applies pushes as they arrive, so a "
                "replica would not hold the same values");
  }
  if (num_servers < 2) {
    throw Error(ErrorCode::kInvalidArgument, "DT_SERVER_REPLICATION=1 needs 2 or more servers, the job has " +
                                                 std::to_string(num_servers));
  }
  return std::make_unique<ReplicaRouter>(num_servers, verdict_wait);
}

size_t bytes_of(const RequestPart& part) {
  return static_cast<size_t>(part.range.end - part.range.begin) * core::dtype_size(part.dtype);
}

}  // namespace

std::unique_ptr<RequestScheduler::Link> RequestScheduler::link_to(ps::WorkerClient& client) {
  return std::make_unique<WorkerClientLink>(client);
}

RequestScheduler::RequestScheduler(std::unique_ptr<Link> link, int worker_rank, bool sync,
                                   int max_in_flight_per_server, bool replicated,
                                   std::chrono::milliseconds verdict_wait)
    : link_(std::move(link)),
      worker_rank_(worker_rank),
      sync_(sync),
      window_(checked_window(max_in_flight_per_server)),
      lanes_(link_->num_servers(), window_),
      router_(checked_router(replicated, sync, link_->num_servers(), verdict_wait)),
      last_progress_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { communicate(); });
}

RequestScheduler::~RequestScheduler() { close(); }

void RequestScheduler::on_suspected_loss(std::function<void()> ask) {
  if (router_) router_->on_suspected_loss(std::move(ask));
}

void RequestScheduler::on_copies_restored(std::function<void(uint32_t changes)> report) {
  if (router_) router_->on_copies_restored(std::move(report));
}

void RequestScheduler::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  const Error closed(ErrorCode::kClosed, "the kvstore was freed before the request was sent");
  std::vector<std::shared_ptr<SubmittedRequest>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = drop_queued();
  }
  for (const auto& request : dropped) finish_unit(request, closed);
}

std::vector<std::shared_ptr<SubmittedRequest>> RequestScheduler::drop_queued() {
  std::vector<std::shared_ptr<SubmittedRequest>> dropped;
  for (const LaneUnit& unit : lanes_.take_all()) dropped.push_back(unit.request);
  if (router_) {
    for (auto& request : router_->take_parked()) dropped.push_back(std::move(request));
  }
  return dropped;
}

void RequestScheduler::abandon(const Error& error) {
  link_->fail(error);
  {
    std::unique_lock<std::shared_mutex> memory(memory_mutex_);
    memory_released_ = true;
  }
  wake_.notify_all();
}

std::chrono::steady_clock::time_point RequestScheduler::last_progress() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_progress_;
}

std::vector<std::shared_ptr<Completion>> RequestScheduler::take_outstanding() {
  std::vector<std::shared_ptr<Completion>> requests;
  std::lock_guard<std::mutex> lock(mutex_);
  requests.swap(outstanding_);
  return requests;
}

std::shared_ptr<Completion> RequestScheduler::take_unreported() {
  std::shared_ptr<Completion> failed;
  std::lock_guard<std::mutex> lock(mutex_);
  failed.swap(unreported_);
  return failed;
}

void RequestScheduler::reported(const std::shared_ptr<Completion>& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (unreported_ == request) unreported_.reset();
}

void RequestScheduler::set_compression(const ps::compression::CompressionConfig& config) {
  config.validate();
  std::lock_guard<std::mutex> lock(mutex_);
  if (config.mode == ps::compression::CompressionMode::kNone) {
    codec_.reset();
    feedback_.reset();
    return;
  }
  codec_ = std::make_shared<const ps::compression::GradientCodec>(config);
  feedback_ = config.error_feedback ? std::make_shared<ps::compression::ErrorFeedback>() : nullptr;
}

// ---- the communication thread ---------------------------------------------

void RequestScheduler::communicate() {
  std::unique_lock<std::mutex> lock(mutex_);
  size_t first = 0;  // rotates, so no server is always served last
  while (!stop_) {
    if (router_) {
      const std::vector<int> servers = router_->take_drops();
      if (!servers.empty()) {
        // Closing a connection waits for its transport's callbacks, which
        // take mutex_.
        lock.unlock();
        for (int server : servers) link_->drop_server(server);
        lock.lock();
        router_->drops_done();
      }
    }
    if (auto failure = link_->failure()) {
      // A lost peer: nothing queued will ever be answered.
      std::vector<std::shared_ptr<SubmittedRequest>> dropped = drop_queued();
      lock.unlock();
      for (const auto& request : dropped) finish_unit(request, failure);
      lock.lock();
    }
    if (router_) {
      // A connection that dropped without its server being declared lost:
      // the error was the request's after all.
      const EndedUnits expired = router_->take_expired();
      if (!expired.empty()) {
        lock.unlock();
        finish_ended(expired);
        lock.lock();
      }
    }
    std::vector<std::pair<size_t, std::vector<LaneUnit>>> batches;  // (lane, units)
    for (size_t i = 0; i < lanes_.size(); ++i) {
      const size_t l = (first + i) % lanes_.size();
      while (lanes_.ready(l)) batches.emplace_back(l, lanes_.take_message(l));
    }
    first = (first + 1) % std::max<size_t>(1, lanes_.size());
    if (batches.empty()) {
      // Woken by new requests and replies; the timeout only rechecks for a
      // lost peer.
      wake_.wait_for(lock, kFailurePoll);
      continue;
    }
    lock.unlock();
    for (auto& [lane, units] : batches) send_batch(lane, std::move(units));
    lock.lock();
  }
}

void RequestScheduler::send_batch(size_t lane, std::vector<LaneUnit> units) {
  const int server = RequestLanes::server_of(lane);
  const DataOp op = units.front().op;
  std::shared_ptr<const ps::compression::GradientCodec> codec;
  std::shared_ptr<ps::compression::ErrorFeedback> feedback;
  if (op == DataOp::Push || op == DataOp::PushPull) {
    std::lock_guard<std::mutex> lock(mutex_);
    codec = codec_;
    feedback = feedback_;
  }
  if (router_) {
    EndedUnits ended;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      router_->take_stale(lane, units, lanes_, ended);
    }
    if (!ended.empty() || units.empty()) wake_.notify_all();
    finish_ended(ended);
    if (units.empty()) return;
  }
  std::optional<ps::EncodedData> encoded;
  // A repeat is recognised by worker, key and round: pulls and inits
  // always, pushes in dist_sync only (an async push has no round).
  const bool may_resend = link_->resends() && (op == DataOp::Pull || op == DataOp::Init || sync_);
  std::optional<Error> error;
  try {
    std::shared_lock<std::shared_mutex> memory(memory_mutex_);
    if (memory_released_) throw Error(ErrorCode::kClosed, "the request was abandoned before it was sent");
    const core::timeline::Span encode("kvstore", codec ? "compress" : "encode", {"server", server});
    encoded.emplace(encode_lane_message(units, worker_rank_, sync_, may_resend, codec.get(), feedback.get()));
  } catch (const Error& e) {
    error = e;
  } catch (const std::bad_alloc&) {
    error = Error(ErrorCode::kOutOfMemory, "out of memory encoding a request");
  }
  auto shared = std::make_shared<std::vector<LaneUnit>>(std::move(units));
  if (error) {
    on_reply(lane, *shared, error, nullptr);
    return;
  }
  const uint64_t waiting_id = waiting_.sent(server, *shared);  // the stall inspector's
  link_->send(
      server, std::move(encoded->message),
      [this, lane, shared, server, sent_us = lane_send_time(), waiting_id](std::optional<Error> e,
                                                                           const ps::Frame* reply) {
        waiting_.answered(waiting_id);
        if (!e) record_lane_reply(*shared, server, sent_us);
        on_reply(lane, *shared, std::move(e), reply);
      },
      may_resend);
}

void RequestScheduler::on_reply(size_t lane, const std::vector<LaneUnit>& units, std::optional<Error> error,
                                const ps::Frame* reply) {
  const DataOp op = units.front().op;
  if (!error && (op == DataOp::Pull || op == DataOp::PushPull)) {
    try {
      std::shared_ptr<const ps::compression::GradientCodec> codec;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        codec = codec_;
      }
      std::shared_lock<std::shared_mutex> memory(memory_mutex_);
      if (memory_released_) throw Error(ErrorCode::kClosed, "the request was abandoned");
      read_pull_reply(*reply, units, codec.get());
    } catch (const Error& e) {
      error = e;
    }
  }
  bool waiting;           // whether the lane has queued messages the freed slot lets go
  bool rerouted = false;  // replicated: the units are not this reply's to finish
  EndedUnits ended;
  std::optional<uint32_t> restored;  // every new copy after this many changes is filled
  // A push answered at new copies still being filled (DataReply.held) is
  // delivered, but fills nothing yet. (The link verified the reply.)
  const auto* data = !error && reply != nullptr ? reply->body<ps::wire::DataReply>() : nullptr;
  const bool held = data != nullptr && data->held();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting = lanes_.answered(lane);
    last_progress_ = std::chrono::steady_clock::now();
    if (router_ && error) {
      const auto no_verdict = [this] { return stop_ || link_->failure().has_value(); };
      rerouted = router_->reroute(RequestLanes::server_of(lane), units, *error, no_verdict, lanes_, ended);
    }
    if (router_ && !error && !held) restored = router_->note_filled(RequestLanes::server_of(lane), units);
  }
  if (router_) router_->report_restored(restored);
  if (waiting || rerouted) wake_.notify_all();
  if (rerouted) {
    finish_ended(ended);
    return;
  }
  for (const LaneUnit& unit : units) finish_unit(unit.request, error);
}

// ---- server changes ---------------------------------------------------------

void RequestScheduler::server_lost(int server) {
  if (!router_) return;
  EndedUnits ended;
  std::optional<uint32_t> restored;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_ || !router_->lose(server, lanes_, ended, restored)) return;
    last_progress_ = std::chrono::steady_clock::now();
  }
  wake_.notify_all();
  router_->report_restored(restored);
  finish_ended(ended);
}

void RequestScheduler::server_rejoined(const ps::NodeInfo& node) {
  if (!router_) return;
  const int server = node.rank;
  bool drop_first = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stop_ || !router_->rejoining(server, lock, drop_first)) return;
  }
  try {
    if (drop_first) link_->drop_server(server);
    link_->reconnect_server(node);
  } catch (const Error& e) {
    link_->fail(Error(e.code(), "cannot reach rejoined " + node.describe() + ": " + e.what()));
    wake_.notify_all();
    return;
  }
  std::optional<uint32_t> restored;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    restored = router_->rejoined(server);
    last_progress_ = std::chrono::steady_clock::now();
  }
  wake_.notify_all();
  router_->report_restored(restored);
}

std::vector<int> RequestScheduler::holders(int server) const {
  if (!router_) return {server};
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> servers;
  for (const ps::PartHolder& holder : router_->holders(server)) servers.push_back(holder.server);
  return servers;
}

int RequestScheduler::times_lost(int server) const {
  if (!router_) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  return router_->times_lost(server);
}

bool RequestScheduler::server_alive(int server) const {
  if (!router_) {
    if (server < 0 || 2 * static_cast<size_t>(server) >= lanes_.size()) throw std::out_of_range("no such server");
    return true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return router_->alive(server);
}

// ---- finishing ----------------------------------------------------------------

void RequestScheduler::finish_ended(const EndedUnits& ended) {
  for (const auto& [request, error] : ended) finish_unit(request, error);
}

void RequestScheduler::finish_unit(const std::shared_ptr<SubmittedRequest>& request,
                                   const std::optional<Error>& error) {
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
      if (request->on_success) request->on_success();
    } catch (const Error& e) {
      outcome = e;
    }
  }
  request->on_success = nullptr;
  if (outcome) {
    // Before the completion finishes: a waiter that sees the error also
    // finds it here, and reported() takes it back.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!unreported_) unreported_ = request->completion;
  }
  request->completion->finish(outcome);
}

// ---- submitting ---------------------------------------------------------------

std::shared_ptr<Completion> RequestScheduler::submit(const Work& work, int priority,
                                                     std::function<void()> on_success) {
  auto request = std::make_shared<SubmittedRequest>();
  request->on_success = std::move(on_success);
  std::vector<std::pair<size_t, std::vector<LaneUnit>>> batches;  // (lane, units) this thread sends
  bool wake = false;                                              // whether the communication thread sends
  {
    std::lock_guard<std::mutex> lock(mutex_);
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
    for (const auto& [op, part] : work) request_bytes += bytes_of(part);
    // A small request leaves from this thread (see below); a big one from
    // the communication thread.
    const bool send_here = request_bytes <= kSendHereBytes;
    std::vector<int> fused(lanes_.size() / 2, -1);  // per server: unknown, no, yes
    auto fuses = [&](int server) {
      int& f = fused[static_cast<size_t>(server)];
      if (f < 0) f = send_here && lanes_.idle(server) ? 1 : 0;
      return f == 1;
    };
    std::vector<bool> touched(lanes_.size(), false);
    auto place_on = [&](int server, DataOp op, const Part& part, bool waits,
                        std::shared_ptr<SharedEncoding> encoding, CopyRoute route) {
      // Pulls that wait for a round have their own lane: they never keep
      // the pushes that complete rounds from leaving.
      const size_t lane = waits ? RequestLanes::pull_lane(server) : RequestLanes::push_lane(server);
      lanes_.queue(lane, LaneUnit{request, op, part, std::move(encoding), priority, route});
      touched[lane] = true;
      ++request->units;
    };
    auto place = [&](DataOp op, const Part& part, bool waits) {
      place_on(part.range.server, op, part, waits, nullptr, CopyRoute{});
    };
    for (const auto& [op, part] : work) {
      if (router_) {
        if (auto error = router_->place(op, part, place_on, fuses)) {
          std::lock_guard<std::mutex> request_lock(request->mutex);
          request->error = std::move(error);
        }
      } else if (sync_ && op == DataOp::PushPull) {
        if (fuses(part.range.server)) {
          place(op, part, true);
        } else {
          place(DataOp::Push, push_half(part), false);
          place(DataOp::Pull, pull_half(part), true);
        }
      } else {
        place(op, part, op == DataOp::Pull);
      }
    }
    request->remaining = request->units + 1;  // + 1: the units cannot finish it while being queued
    // For a small request, what the windows allow leaves from this thread:
    // waking the communication thread costs a context switch, the largest
    // part of a small request's latency. Fused messages always leave here
    // (fuses() checked the window). A big request's encoding (copying
    // megabytes) stays off the caller's thread, which in overlapped training
    // is running backward; and its fresh multi-megabyte messages, allocated
    // in the communication thread's malloc arena, are reused there instead
    // of being faulted in again each time from the main arena (measured:
    // 16 MiB pushes 15-40% slower when encoded here).
    for (size_t lane = 0; lane < lanes_.size() && send_here; ++lane) {
      while (touched[lane] && lanes_.ready(lane)) batches.emplace_back(lane, lanes_.take_message(lane));
    }
    wake = !send_here;
    if (outstanding_.size() > 64) {
      outstanding_.erase(std::remove_if(outstanding_.begin(), outstanding_.end(),
                                        [](const std::shared_ptr<Completion>& c) { return c->done(); }),
                         outstanding_.end());
    }
    outstanding_.push_back(request->completion);
    last_progress_ = std::chrono::steady_clock::now();
  }
  if (wake) wake_.notify_all();
  for (auto& [lane, units] : batches) send_batch(lane, std::move(units));
  // Whatever did not fit the windows leaves from the communication thread
  // as replies make room; it is woken then (on_reply).
  finish_unit(request, std::nullopt);
  return request->completion;
}

}  // namespace dt::kvstore
