#include "ps/scheduler/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "core/timeline/timeline.h"
#include "ps/roles/node_table.h"
#include "ps/scheduler/barrier_book.h"
#include "ps/scheduler/scheduler_stalls.h"
#include "ps/scheduler/member_table.h"
#include "ps/scheduler/server_recovery.h"
#include "ps/scheduler/status_relay.h"
#include "ps/scheduler/worker_roster.h"
#include "ps/transport/frame.h"
#include "ps/transport/rate_limited_log.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;
using core::LogLevel;
using Clock = SchedulerClock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string port_of(const std::string& url) {
  const size_t colon = url.rfind(':');
  return colon == std::string::npos ? std::string() : url.substr(colon + 1);
}

}  // namespace

// The plain path: registrations into the member table, heartbeats, numbered
// barriers, goodbyes and losses. A loss the job survives, and a node taking
// a departed one's place, go to the two companions (roster, recovery).
struct Scheduler::State {
  State(const JobConfig& j, const PsOptions& o) : job(j), options(o) {}

  const JobConfig job;
  const PsOptions options;
  std::unique_ptr<RequestServer> server;
  std::string url;

  std::mutex mutex;
  std::condition_variable cv;
  Clock::time_point started = Clock::now();

  MemberTable members{job};
  BarrierBook barriers{[this](uint64_t id, const std::vector<Waiter>& w) { return barrier_ready(id, w); },
                       [this](uint64_t id, std::vector<Waiter>& w) { complete_barrier(id, w); }};
  std::vector<LostNode> lost;
  // Workers lost under DT_WORKER_LOSS=continue, a server lost under
  // DT_SERVER_REPLICATION=1: the job goes on without them.
  std::vector<LostNode> departed;
  WorkerRoster roster{job, options, members, barriers, departed};
  ServerRecovery recovery{job, options, members, departed};
  SchedulerStalls stalls{members, barriers, options.stall_warning_s};
  // dtrun's live summary of processes on other hosts (DT_STATUS_DIR), else null.
  std::unique_ptr<StatusRelay> status_relay = StatusRelay::from_environment();
  // The stall inspector's watch over stalls (started once serving).
  std::unique_ptr<core::StallWatch> stall_watch;
  Clock::time_point first_loss;
  bool stopping = false;  // every worker sent Shutdown
  Clock::time_point stop_time;
  std::optional<Error> failure;  // ends run() with this error
  RateLimitedLog refusals{"disttrain scheduler"};

  void handle(Message request, RequestServer::Reply reply);
  void on_register(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply);
  // A registration after publication: a node taking a departed one's place,
  // if a companion admits it.
  void join(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply);
  void on_heartbeat(const wire::Heartbeat& h, uint32_t pipe, RequestServer::Reply& reply);
  void on_barrier(const wire::Barrier& b, uint32_t pipe, RequestServer::Reply& reply);
  // A Regroup or an Admission message.
  void on_group(const GroupCall& call, uint32_t pipe, RequestServer::Reply& reply);
  // The worker rank names, checked: in range, on its own connection, in
  // the job (not left, not lost). what names the message in errors.
  Member& calling_worker(int rank, uint32_t pipe, const char* what);
  bool barrier_ready(uint64_t id, const std::vector<Waiter>& waiters) const;
  void complete_barrier(uint64_t id, std::vector<Waiter>& waiters);
  void on_shutdown(const wire::Shutdown& s, uint32_t pipe, RequestServer::Reply& reply);
  void stop_if_every_worker_left();
  void on_pipe_closed(uint32_t pipe);
  void mark_lost(Member& m, const std::string& reason);
  // The job goes on without m (a companion said it may).
  void depart(Member& m, const std::string& reason);
  void fail_registrations(const Error& error);
  Message heartbeat_reply();
};

void Scheduler::State::handle(Message request, RequestServer::Reply reply) {
  const uint32_t pipe = request.pipe_id();
  std::optional<Frame> frame;
  try {
    frame.emplace(Frame::parse(std::move(request)));
  } catch (const Error& e) {
    refusals.print(std::string("rejected a message: ") + e.what());
    reply(make_error_reply(e.code(), e.what()));
    return;
  }
  if (core::log_enabled(LogLevel::kTrace)) {
    core::log(LogLevel::kTrace, "scheduler",
              std::string(body_name(frame->type())) + " on connection " + std::to_string(pipe));
  }
  std::lock_guard<std::mutex> lock(mutex);
  try {
    switch (frame->type()) {
      case wire::Body::Register:
        on_register(*frame->body<wire::Register>(), pipe, reply);
        break;
      case wire::Body::Heartbeat:
        on_heartbeat(*frame->body<wire::Heartbeat>(), pipe, reply);
        break;
      case wire::Body::Barrier:
        on_barrier(*frame->body<wire::Barrier>(), pipe, reply);
        break;
      case wire::Body::Regroup: {
        const auto& g = *frame->body<wire::Regroup>();
        on_group(GroupCall{g.rank(), g.generation(), g.data(), false}, pipe, reply);
        break;
      }
      case wire::Body::Admission: {
        const auto& a = *frame->body<wire::Admission>();
        on_group(GroupCall{a.rank(), a.generation(), a.data(), true}, pipe, reply);
        break;
      }
      case wire::Body::Shutdown:
        on_shutdown(*frame->body<wire::Shutdown>(), pipe, reply);
        break;
      default:
        throw Error(ErrorCode::kProtocol, std::string("the scheduler does not serve ") + body_name(frame->type()) + " messages");
    }
  } catch (const Error& e) {
    refusals.print(std::string("refused ") + body_name(frame->type()) + " on connection " + std::to_string(pipe) +
                   ": " + e.what());
    reply(make_error_reply(e.code(), e.what()));
  }
  cv.notify_all();
}

void Scheduler::State::on_register(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply) {
  if (members.published()) {
    join(r, pipe, reply);
    return;
  }
  if (failure) throw *failure;
  if (members.add(r, pipe, reply)) members.publish();
}

void Scheduler::State::join(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply) {
  const Role role = from_wire(r.role());
  const bool ending = failure || !lost.empty() || stopping;
  if (role == Role::kServer && options.server_replicas > 0) {
    recovery.join(r, pipe, reply, ending);
    return;
  }
  if (role != Role::kWorker || options.worker_loss != WorkerLossPolicy::kContinue) {
    throw Error(ErrorCode::kBadState, std::string("registration of a ") + role_name(role) +
                                          " after the job started: the node table is already published (only a "
                                          "worker may join a running job, in the place of a lost one, under "
                                          "DT_WORKER_LOSS=continue, or a server under DT_SERVER_REPLICATION=1)");
  }
  roster.join(r, pipe, reply, ending);
}

Message Scheduler::State::heartbeat_reply() {
  flatbuffers::FlatBufferBuilder fbb(256);
  std::vector<flatbuffers::Offset<wire::LostNode>> list;
  for (const LostNode& l : lost) list.push_back(write_lost_node(fbb, l));
  std::vector<flatbuffers::Offset<wire::LostNode>> gone;
  for (const LostNode& l : departed) gone.push_back(write_lost_node(fbb, l));
  std::vector<flatbuffers::Offset<wire::RejoinedServer>> back;
  for (const RejoinedServer& r : recovery.rejoined()) back.push_back(write_rejoined_server(fbb, r));
  return make_message(fbb, wire::CreateHeartbeatReply(fbb, fbb.CreateVector(list), stopping, fbb.CreateVector(gone),
                                                      fbb.CreateVector(back), roster.awaiting_admission(),
                                                      core::timeline::now_us(),
                                                      fbb.CreateVector(stalls.stalled_on())));
}

void Scheduler::State::on_heartbeat(const wire::Heartbeat& h, uint32_t pipe, RequestServer::Reply& reply) {
  Member& m = members.speaker(from_wire(h.role()), h.rank(), pipe, "heartbeat");
  recovery.heard(m, h);
  stalls.heard(m, h);
  if (status_relay) status_relay->take(m.info.role, m.info.rank, h);
  m.last_heartbeat = Clock::now();
  if (!lost.empty() || (stopping && m.info.role == Role::kServer)) m.told = true;
  if (stopping && m.info.role == Role::kServer) m.leave();
  reply(heartbeat_reply());
}

Member& Scheduler::State::calling_worker(int rank, uint32_t pipe, const char* what) {
  if (!members.published()) throw Error(ErrorCode::kBadState, "barrier before the node table was published");
  if (rank < 0 || rank >= job.num_workers) {
    throw Error(ErrorCode::kInvalidArgument, "barrier from worker rank " + std::to_string(rank) + " out of range");
  }
  Member& m = members.speaker(Role::kWorker, rank, pipe, what);
  if (m.left()) throw Error(ErrorCode::kBadState, "barrier from " + m.info.describe() + " after its Shutdown");
  if (m.lost()) throw Error(ErrorCode::kPeerLost, "barrier from " + m.info.describe() + ", which the job already lost");
  return m;
}

void Scheduler::State::on_group(const GroupCall& call, uint32_t pipe, RequestServer::Reply& reply) {
  Member& m = calling_worker(call.rank, pipe, "barrier");
  if (!lost.empty()) throw Error(ErrorCode::kPeerLost, lost.front().message());
  roster.enter(call, m, reply, stopping);
}

void Scheduler::State::on_barrier(const wire::Barrier& b, uint32_t pipe, RequestServer::Reply& reply) {
  Member& m = calling_worker(b.rank(), pipe, "barrier");
  if (m.awaiting_admission()) {
    throw Error(ErrorCode::kBadState, "barrier from " + m.info.describe() +
                                          ", which waits to be let into the job (rule: a joined worker's first call "
                                          "is the admission)");
  }
  // Each worker enters barriers 0, 1, 2, ... in order: an id from elsewhere
  // would open a barrier nobody else enters and hold a reply for nothing.
  if (b.barrier_id() != m.next_barrier) {
    throw Error(ErrorCode::kBadState, "worker " + std::to_string(b.rank()) + " entered barrier " +
                                          std::to_string(b.barrier_id()) + " where its next barrier is " +
                                          std::to_string(m.next_barrier) +
                                          " (rule: each worker enters its barriers in order, once)");
  }
  ++m.next_barrier;
  if (!lost.empty()) throw Error(ErrorCode::kPeerLost, lost.front().message());
  std::optional<std::vector<uint8_t>> data;
  if (b.data() != nullptr) data.emplace(b.data()->begin(), b.data()->end());
  barriers.enter(b.barrier_id(), Waiter{b.rank(), reply, std::move(data)});
}

bool Scheduler::State::barrier_ready(uint64_t id, const std::vector<Waiter>& waiters) const {
  if (is_regroup(id)) return roster.ready(id, waiters);
  const size_t expected = members.workers_at_barrier(id);
  return waiters.size() >= expected && expected > 0;
}

void Scheduler::State::complete_barrier(uint64_t id, std::vector<Waiter>& waiters) {
  if (answer_without_gather(id, waiters)) return;
  const uint64_t next_barrier = roster.let_in(id, waiters);
  answer_gathered(waiters, roster.generation(), roster.departed_workers(), next_barrier);
}

void Scheduler::State::on_shutdown(const wire::Shutdown& s, uint32_t pipe, RequestServer::Reply& reply) {
  const Role role = from_wire(s.role());
  // Servers never say goodbye: the scheduler tells them to stop.
  if (role != Role::kWorker) {
    throw Error(ErrorCode::kBadState, std::string("shutdown from a ") + role_name(role) +
                                          " (rule: only workers send Shutdown; servers are told to stop)");
  }
  Member& m = members.speaker(role, s.rank(), pipe, "shutdown");
  if (m.left()) throw Error(ErrorCode::kBadState, "shutdown from " + m.info.describe() + " twice");
  m.leave();
  reply(make_ack());
  stop_if_every_worker_left();
}

void Scheduler::State::stop_if_every_worker_left() {
  // A departed worker (DT_WORKER_LOSS=continue) never says goodbye.
  const bool all_left = std::all_of(members.all().begin(), members.all().end(), [](const auto& kv) {
    const Member& m = kv.second;
    return m.info.role != Role::kWorker || m.left() || m.lost() || m.awaiting_admission();
  });
  if (all_left && !stopping) {
    stopping = true;
    stop_time = Clock::now();
    roster.turn_away_unadmitted();
  }
}

void Scheduler::State::mark_lost(Member& m, const std::string& reason) {
  // A node that never counted in the job is simply gone; one the job can do
  // without departs. Either is a companion's call.
  if (roster.lose_unadmitted(m, reason) || recovery.lose_rejoining(m, reason)) return;
  if (roster.may_depart(m) || recovery.may_depart(m)) {
    depart(m, reason);
    return;
  }
  m.lose();
  LostNode l{m.info.role, m.info.rank, m.info.host, m.info.pid, reason};
  core::log(LogLevel::kInfo, "scheduler", l.message());
  const int64_t at = core::timeline::now_us();  // one read: an instant, never a negative span
  core::timeline::record("scheduler", "lost " + m.info.describe(), at, at);
  if (lost.empty()) first_loss = Clock::now();
  lost.push_back(l);
  barriers.fail([](uint64_t) { return true; }, ErrorCode::kPeerLost,
                [&l](uint64_t, const Waiter&) { return l.message(); });
  for (auto& [key, other] : members.all()) other.told = false;
}

void Scheduler::State::depart(Member& m, const std::string& reason) {
  m.lose();
  const int64_t at = core::timeline::now_us();  // one read: an instant, never a negative span
  core::timeline::record("scheduler", "departed " + m.info.describe(), at, at);
  LostNode l{m.info.role, m.info.rank, m.info.host, m.info.pid, reason};
  departed.push_back(l);
  if (m.info.role == Role::kServer) {
    recovery.departed(l);
    return;
  }
  roster.departed(m, l);
  stop_if_every_worker_left();
}

void Scheduler::State::fail_registrations(const Error& error) {
  members.fail_registrations(error);
  if (!failure) failure = error;
}

void Scheduler::State::on_pipe_closed(uint32_t pipe) {
  core::log(LogLevel::kDebug, "scheduler", "connection " + std::to_string(pipe) + " closed");
  std::lock_guard<std::mutex> lock(mutex);
  if (!members.published()) {
    // A registered node died before the job started: nobody can wait for it.
    if (const Registration* g = members.registration_on(pipe)) {
      const LostNode l{g->info.role, -1, g->info.host, g->info.pid, "connection closed during start-up"};
      fail_registrations(Error(ErrorCode::kPeerLost, l.message()));
    }
  } else {
    for (auto& [key, m] : members.all()) {
      if (m.pipe != pipe) continue;
      // A member told of the job's loss closes as it exits: that is the end
      // the scheduler waits for, not another loss.
      if (m.left() || (m.told && !lost.empty())) {
        m.disconnected = true;
      } else if (!m.lost()) {
        mark_lost(m, "connection closed");
      }
    }
  }
  cv.notify_all();
}

Scheduler::Scheduler(const JobConfig& job, const PsOptions& options)
    : state_(std::make_unique<State>(job, options)) {
  options.validate();
  State& st = *state_;
  // The clock every member's timeline is placed on (member_timeline.h).
  core::timeline::set_process(core::timeline::ProcessLabel{"scheduler", -1, 0, true});
  // A node keeps at most one deferred reply (registration or barrier), a
  // heartbeat and a shutdown in flight: more on one connection is refused,
  // so no node (or impostor) can hold what the others' heartbeats need.
  ConnectionPolicy policy;
  policy.per_connection = 4;
  // The scheduler answers held registrations and barriers at its own
  // deadlines; the transport's is the backstop behind them.
  policy.reply_deadline_s = std::max(options.startup_timeout_s, options.request_timeout_s) + options.heartbeat_timeout_s;
  const int receivers = 2 * (job.num_servers + job.num_workers) + 4;
  st.server = std::make_unique<RequestServer>(
      std::vector<std::string>{job.scheduler_listen_url}, receivers,
      [&st](Message request, RequestServer::Reply reply) { st.handle(std::move(request), std::move(reply)); },
      options.max_message_bytes, [&st](uint32_t pipe) { st.on_pipe_closed(pipe); }, policy, job.security);
  st.url = st.server->bound_urls().front();
  st.stall_watch = std::make_unique<core::StallWatch>("scheduler", options.stall_warning_s, [&st] {
    std::lock_guard<std::mutex> lock(st.mutex);
    return st.stalls.open_waits();
  });
  st.stall_watch->start();
  if (!job.port_file.empty()) {
    // Written to a temporary name and renamed, so a launcher polling the file
    // never reads a partial number.
    const std::string tmp = job.port_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << port_of(st.url) << "\n";
      if (!out) throw Error(ErrorCode::kIo, "cannot write DT_PS_PORT_FILE " + tmp);
    }
    if (std::rename(tmp.c_str(), job.port_file.c_str()) != 0) {
      throw Error(ErrorCode::kIo, "cannot rename " + tmp + " to DT_PS_PORT_FILE " + job.port_file);
    }
  }
}

Scheduler::~Scheduler() {
  // Stop the watch and the transport first: their threads use the state.
  state_->stall_watch.reset();
  state_->server.reset();
  core::timeline::write_process_file();
}

std::string Scheduler::url() const { return state_->url; }

void Scheduler::run() {
  State& st = *state_;
  const PsOptions& o = st.options;
  const auto tick = to_ms(std::min(0.05, o.heartbeat_interval_s / 4));
  // After a loss, nodes learn of it from their next heartbeat reply.
  const double grace = o.heartbeat_timeout_s + 2 * o.heartbeat_interval_s;
  std::unique_lock<std::mutex> lock(st.mutex);
  for (;;) {
    st.cv.wait_for(lock, tick);
    const Clock::time_point now = Clock::now();
    if (st.failure) throw *st.failure;
    if (!st.members.published()) {
      if (seconds_since(st.started) > o.startup_timeout_s) {
        st.fail_registrations(Error(ErrorCode::kTimedOut, st.members.missing_text(o.startup_timeout_s)));
        throw *st.failure;
      }
      continue;
    }
    st.recovery.expire_joins(o.startup_timeout_s, !st.lost.empty() || st.stopping);
    for (auto& [key, m] : st.members.all()) {
      if (m.left() || m.lost()) continue;
      const double silent = std::chrono::duration<double>(now - m.last_heartbeat).count();
      if (silent > o.heartbeat_timeout_s) st.mark_lost(m, "no heartbeat for " + seconds_text(silent));
    }
    st.barriers.expire(o.request_timeout_s, st.members.live_workers());
    if (!st.lost.empty()) {
      // Told is not enough here either: a reply still queued when this
      // process exits is dropped, and its node would then name the
      // scheduler instead of the node the job lost. Each node closes its
      // connection once it has the news (it exits).
      // A worker waiting to be let in holds nothing of the job: it learns of
      // the end from this process's, and ends after it (a launcher then
      // sees the job fail first).
      const bool all_gone = std::all_of(st.members.all().begin(), st.members.all().end(), [](const auto& kv) {
        const Member& m = kv.second;
        return m.lost() || m.left() || m.awaiting_admission() || (m.told && m.disconnected);
      });
      if (all_gone || seconds_since(st.first_loss) > grace) throw Error(ErrorCode::kPeerLost, st.lost.front().message());
    } else if (st.stopping) {
      // Told is not enough: the transport drops replies still queued when
      // this process closes its socket, and a server that missed its stop
      // would then report the scheduler lost. So wait until each server has
      // closed its connection, which it does once the stop has arrived.
      const bool servers_gone = std::all_of(st.members.all().begin(), st.members.all().end(), [](const auto& kv) {
        const Member& m = kv.second;
        return m.info.role != Role::kServer || m.lost() || (m.told && m.disconnected);
      });
      if (servers_gone || seconds_since(st.stop_time) > o.shutdown_timeout_s) return;
    }
  }
}

}  // namespace dt::ps
