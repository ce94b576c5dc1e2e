#include "ps/roles/cluster_member.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "core/timeline/timeline.h"
#include "ps/roles/member_timeline.h"
#include "ps/transport/frame.h"
#include "ps/transport/request_client.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

struct ClusterMember::State {
  JobConfig job;
  PsOptions options;
  std::unique_ptr<RequestClient> client;
  NodeTable table;
  int rank = -1;
  NodeNews news;

  mutable std::mutex mutex;
  std::condition_variable cv;
  bool stopping = false;  // this node is leaving: the thread exits
  bool shut_down = false;
  // The connection to the scheduler closed while the job ran: the heartbeat
  // thread reports the loss, after the reply it may still be reading (which
  // may name the node whose loss ended the job).
  bool scheduler_closed = false;
  uint64_t next_barrier = 0;
  // A worker that joined a job without servers, until it is let in.
  bool awaiting_admission_self = false;
  bool beat_now = false;                // ask_for_news()
  uint32_t copies_restored = 0;         // report_copies_restored()
  std::vector<int> stalled_on;          // report_stalled_on()
  std::optional<core::WorkerStatus> worker_status;       // report_status()
  std::function<core::ServerStatus()> server_status;     // report_status_from()
  Clock::time_point quick_beats_until;  // ask_for_news(): every 50 ms until then
  std::thread heartbeat_thread;

  void heartbeat_loop();
  // A heartbeat with what this node reports now.
  Message heartbeat_message();
  // Barriers and all-gathers share one sequence of ids.
  uint64_t take_barrier_id() {
    std::lock_guard<std::mutex> lock(mutex);
    return next_barrier++;
  }
  // An all-gather barrier (numbered, or a regroup at generation): every
  // worker's data by rank, as the scheduler answered; expected: how many
  // answers (0: any but none).
  Gathered gather(const char* what, const std::vector<uint8_t>& data, bool regroup, bool admission,
                  uint64_t generation, size_t expected);
  LostNode scheduler_lost(const std::string& reason) const {
    return LostNode{Role::kScheduler, 0, job.root_url, table.scheduler_pid, reason};
  }
  void stop_heartbeats();
  // A barrier's request; a dropped connection is the scheduler's loss
  // (Error(kPeerLost) naming it), whichever of the two nng reports first.
  Message call_scheduler(Message request) {
    try {
      return client->call(std::move(request), to_ms(options.request_timeout_s));
    } catch (const Error& e) {
      // The heartbeat thread names the loss within a moment of the close.
      if (e.code() == ErrorCode::kNetwork) news.wait_for_loss(options.heartbeat_timeout_s);
      news.check();
      throw;
    }
  }
};

void ClusterMember::State::heartbeat_loop() {
  const auto interval = to_ms(options.heartbeat_interval_s);
  Clock::time_point last_ok = Clock::now();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      const auto wait = Clock::now() < quick_beats_until ? std::chrono::milliseconds(50) : interval;
      cv.wait_for(lock, wait, [&] { return stopping || scheduler_closed || beat_now; });
      beat_now = false;
      if (stopping) return;
      if (scheduler_closed) {
        lock.unlock();
        news.add_lost(scheduler_lost("connection to the scheduler closed"));
        return;
      }
    }
    try {
      const int64_t sent_us = core::timeline::now_us();
      Message reply = client->call(heartbeat_message(), to_ms(options.heartbeat_timeout_s));
      const int64_t received_us = core::timeline::now_us();
      const Frame frame = Frame::parse(std::move(reply));
      const wire::HeartbeatReply& r = frame.expect<wire::HeartbeatReply>();
      refine_timeline_clock(sent_us, r.scheduler_clock_us(), received_us);
      last_ok = Clock::now();
      news.take_reply(r, job.role, rank);
    } catch (const Error& e) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        // Once this node is leaving, the scheduler may be gone.
        if (stopping) return;
      }
      // Likewise once the job ended.
      if (news.job_ended()) return;
      const double silent = std::chrono::duration<double>(Clock::now() - last_ok).count();
      if (silent >= options.heartbeat_timeout_s) {
        news.add_lost(scheduler_lost("no heartbeat reply for " + seconds_text(silent) + " (" + e.what() + ")"));
      }
    }
  }
}

Message ClusterMember::State::heartbeat_message() {
  uint32_t copies = 0;
  std::vector<int> stalls;
  std::optional<core::WorkerStatus> worker;
  std::function<core::ServerStatus()> server;
  {
    std::lock_guard<std::mutex> lock(mutex);
    copies = copies_restored;
    stalls = stalled_on;
    worker = worker_status;
    server = server_status;
  }
  flatbuffers::FlatBufferBuilder fbb(128);
  const auto stalled = fbb.CreateVector(stalls);
  flatbuffers::Offset<wire::WorkerStatusReport> worker_report;
  flatbuffers::Offset<wire::ServerStatusReport> server_report;
  if (worker) {
    const core::WorkerStatus& n = *worker;
    worker_report = wire::CreateWorkerStatusReport(fbb, n.steps, n.images, n.traffic.bytes_sent,
                                                   n.traffic.bytes_received, n.compute_s, n.exchange_s, n.wall_s);
  }
  if (server) {
    const core::ServerStatus n = server();
    server_report = wire::CreateServerStatusReport(fbb, n.requests, n.traffic.bytes_sent, n.traffic.bytes_received,
                                                   n.compute_s, n.communicate_s, n.waiting_s, n.wall_s);
  }
  return make_message(fbb, wire::CreateHeartbeat(fbb, to_wire(job.role), rank, copies, stalled, worker_report,
                                                 server_report));
}

void ClusterMember::State::stop_heartbeats() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  cv.notify_all();
  if (heartbeat_thread.joinable()) heartbeat_thread.join();
}

ClusterMember::ClusterMember(const JobConfig& job, const PsOptions& options, std::vector<std::string> data_urls,
                             const std::function<void(const NodeTable&)>& before_heartbeats)
    : state_(std::make_unique<State>()) {
  options.validate();
  if (job.role == Role::kScheduler) throw Error(ErrorCode::kInvalidArgument, "the scheduler is not a cluster member");
  State& st = *state_;
  st.job = job;
  st.options = options;
  st.client = std::make_unique<RequestClient>(job.root_url, std::chrono::milliseconds(0), options.max_message_bytes,
                                              job.security);

  const auto registration = [&] {
    flatbuffers::FlatBufferBuilder fbb(512);
    auto host = fbb.CreateString(job.node_host);
    auto urls = fbb.CreateVectorOfStrings(data_urls);
    auto reg = wire::CreateRegister(fbb, to_wire(job.role), host, static_cast<int64_t>(::getpid()), urls,
                                    job.role == Role::kWorker ? job.worker_id : -1, job.num_servers, job.num_workers);
    return make_message(fbb, reg);
  };
  Message reply;
  try {
    reply = st.client->call(registration(), to_ms(options.startup_timeout_s));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimedOut) throw;
    if (!st.client->connected()) {
      throw Error(ErrorCode::kTimedOut,
                  "scheduler at " + job.root_url + " unreachable for " + seconds_text(options.startup_timeout_s));
    }
    throw Error(ErrorCode::kTimedOut, "scheduler at " + job.root_url + " did not publish the node table within " +
                                          seconds_text(options.startup_timeout_s) + " (not every node registered)");
  }
  try {
    const int64_t received_us = core::timeline::now_us();
    const Frame frame = Frame::parse(std::move(reply));
    st.table = read_node_table(frame.expect<wire::NodeTable>());
    label_timeline(job.role, st.table, received_us);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kClosed || job.role != Role::kWorker) throw;
    // A worker started again to join a job that is ending (every other
    // worker finished, or the job was lost): it stays until the scheduler
    // goes, so that a launcher restarting failed workers alone (dtrun
    // --max-restarts) does not start it again and again meanwhile, and sees
    // the job's own end first.
    const auto deadline = Clock::now() + std::chrono::duration<double>(options.startup_timeout_s);
    while (Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      try {
        Frame::parse(st.client->call(registration(), std::chrono::milliseconds(1000))).expect<wire::NodeTable>();
      } catch (const Error& again) {
        if (again.code() != ErrorCode::kClosed) break;
      }
    }
    throw Error(ErrorCode::kClosed, std::string(e.what()) + " (it waited until the job had ended)");
  }
  st.rank = st.table.your_rank;
  st.next_barrier = st.table.first_barrier;
  st.awaiting_admission_self = st.table.joined_running_job && st.table.num_servers == 0;
  if (st.table.num_servers != job.num_servers || st.table.num_workers != job.num_workers || st.rank < 0 ||
      st.rank >= (job.role == Role::kServer ? job.num_servers : job.num_workers)) {
    throw Error(ErrorCode::kProtocol, "the scheduler's node table contradicts this node's job layout");
  }
  const std::string self = std::string(role_name(job.role)) + " " + std::to_string(st.rank);
  core::log(core::LogLevel::kDebug, self, "node table from the scheduler at " + job.root_url);
  for (const std::string& line : node_table_lines(st.table)) core::log(core::LogLevel::kDebug, self, "  " + line);
  // A scheduler that dies closes this connection: seen at once, like any
  // other node's death, not after the heartbeat timeout. Its closing after
  // the job ended (or after this node left) is no loss.
  st.client->on_disconnect([&st] {
    const bool ended = st.news.job_ended();
    {
      std::lock_guard<std::mutex> lock(st.mutex);
      if (st.stopping || ended || st.shut_down) return;
      st.scheduler_closed = true;
    }
    st.cv.notify_all();
  });
  if (before_heartbeats) before_heartbeats(st.table);
  // A node joining the running job beats at once: a rejoined server is
  // announced at its first heartbeat, which would otherwise come an
  // interval later (1 s by default).
  st.beat_now = st.table.joined_running_job;
  st.heartbeat_thread = std::thread([&st] { st.heartbeat_loop(); });
}

ClusterMember::~ClusterMember() {
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    st.stopping = true;
  }
  const bool failover = st.news.any_loss_or_departure();
  // Closing aborts a heartbeat in flight, so the join below is prompt. After
  // a failover nng_close of the scheduler's socket has blocked for good at
  // exit (a worker's, once the scheduler had gone; nng 1.5.2, not
  // understood, as with the servers' sockets in WorkerClient): the socket
  // is abandoned then, left open until the process ends.
  if (failover) {
    st.client->abandon();
  } else {
    st.client->close();
  }
  st.stop_heartbeats();
  core::timeline::write_process_file();
}

Role ClusterMember::role() const { return state_->job.role; }
int ClusterMember::rank() const { return state_->rank; }
const NodeTable& ClusterMember::table() const { return state_->table; }

void ClusterMember::barrier() {
  State& st = *state_;
  if (st.job.role != Role::kWorker) throw Error(ErrorCode::kBadState, "only workers take part in barriers");
  check_peers();
  const uint64_t id = st.take_barrier_id();
  flatbuffers::FlatBufferBuilder fbb(64);
  Message reply = st.call_scheduler(make_message(fbb, wire::CreateBarrier(fbb, st.rank, id)));
  Frame::parse(std::move(reply)).expect<wire::Ack>();
}

ClusterMember::Gathered ClusterMember::State::gather(const char* what, const std::vector<uint8_t>& data, bool regroup,
                                                    bool admission, uint64_t generation, size_t expected) {
  if (job.role != Role::kWorker) throw Error(ErrorCode::kBadState, std::string(what) + ": only workers take part");
  if (data.size() > kMaxGatherBytes) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": " + std::to_string(data.size()) +
                                                 " bytes, at most " + std::to_string(kMaxGatherBytes) +
                                                 " go through the scheduler");
  }
  news.check();
  // A regroup or an admission is not one of the numbered barriers: it
  // takes no id.
  flatbuffers::FlatBufferBuilder fbb(128 + data.size());
  const auto bytes = fbb.CreateVector(data);
  Message request = admission ? make_message(fbb, wire::CreateAdmission(fbb, rank, generation, bytes))
                    : regroup ? make_message(fbb, wire::CreateRegroup(fbb, rank, generation, bytes))
                              : make_message(fbb, wire::CreateBarrier(fbb, rank, take_barrier_id(), bytes));
  Message reply = call_scheduler(std::move(request));
  const Frame frame = Frame::parse(std::move(reply));
  const wire::Ack& ack = frame.expect<wire::Ack>();
  const auto* gathered = ack.gathered();
  if (gathered == nullptr || gathered->size() == 0 || (expected > 0 && gathered->size() != expected)) {
    throw Error(ErrorCode::kProtocol, std::string(what) + ": the scheduler answered without every worker's data "
                                                          "(a scheduler of an older disttrain version?)");
  }
  Gathered result;
  result.generation = ack.regroup_generation();
  result.departures = ack.departed_workers();
  if (admission) {
    std::lock_guard<std::mutex> lock(mutex);
    if (awaiting_admission_self) {
      // Barriers the others entered while it waited finished without it.
      next_barrier = ack.next_barrier();
      awaiting_admission_self = false;
    }
  }
  for (const wire::GatheredData* g : *gathered) {
    const int r = g->rank();
    if (r < 0 || r >= job.num_workers || result.data.count(r) > 0) {
      throw Error(ErrorCode::kProtocol, std::string(what) + ": the scheduler's answer lists worker rank " +
                                            std::to_string(r) + " out of range or twice");
    }
    std::vector<uint8_t>& theirs = result.data[r];
    if (g->data() != nullptr) theirs.assign(g->data()->begin(), g->data()->end());
  }
  return result;
}

std::vector<std::vector<uint8_t>> ClusterMember::allgather(const std::vector<uint8_t>& data) {
  const size_t workers = static_cast<size_t>(state_->job.num_workers);
  Gathered by_rank = state_->gather("allgather", data, false, false, 0, workers);
  std::vector<std::vector<uint8_t>> result(workers);
  for (auto& [r, theirs] : by_rank.data) result[static_cast<size_t>(r)] = std::move(theirs);
  return result;
}

std::map<int, std::vector<uint8_t>> ClusterMember::regroup(uint64_t generation, const std::vector<uint8_t>& data) {
  return state_->gather("regroup", data, true, false, generation, 0).data;
}

ClusterMember::Gathered ClusterMember::admission(uint64_t generation, const std::vector<uint8_t>& data) {
  return state_->gather("admission", data, true, true, generation, 0);
}

uint32_t ClusterMember::workers_awaiting_admission() const { return state_->news.awaiting_admission(); }
void ClusterMember::on_lost(LostCallback callback) { state_->news.on_lost(std::move(callback)); }
void ClusterMember::on_departed(LostCallback callback) { state_->news.on_departed(std::move(callback)); }
void ClusterMember::on_server_change(std::function<void(const ServerNews&)> callback) {
  state_->news.on_server_change(std::move(callback));
}
void ClusterMember::wait_for_scheduler_gone(double timeout_s) const { state_->news.wait_for_scheduler_lost(timeout_s); }
std::vector<LostNode> ClusterMember::departed() const { return state_->news.departed(); }
std::vector<LostNode> ClusterMember::lost() const { return state_->news.lost(); }
void ClusterMember::check_peers() const { state_->news.check(); }

void ClusterMember::ask_for_news() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->beat_now = true;
    state_->quick_beats_until = Clock::now() + std::chrono::milliseconds(500);
  }
  state_->cv.notify_all();
}

void ClusterMember::report_copies_restored(uint32_t losses) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (losses <= state_->copies_restored) return;
    state_->copies_restored = losses;
    state_->beat_now = true;  // a further loss is weighed with it from now on
  }
  state_->cv.notify_all();
}

void ClusterMember::report_stalled_on(const std::vector<int>& workers) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (workers == state_->stalled_on) return;
    state_->stalled_on = workers;
    state_->beat_now = true;
  }
  state_->cv.notify_all();
}

std::vector<int> ClusterMember::stalled_workers() const { return state_->news.stalled_on(); }

void ClusterMember::report_status(const core::WorkerStatus& numbers) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->worker_status = numbers;
}

void ClusterMember::report_status_from(std::function<core::ServerStatus()> source) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->server_status = std::move(source);
}

void ClusterMember::wait_for_stop() { state_->news.wait_for_end(); }

void ClusterMember::shutdown() {
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (st.shut_down) return;
    st.shut_down = true;
  }
  const bool job_failed = st.news.any_lost();
  // After a lost node the scheduler ends the job and may be gone already: a
  // goodbye would only wait for a reply that never comes. Even otherwise the
  // wait is bounded by the heartbeat timeout, after which a silent scheduler
  // counts as lost anyway.
  if (st.job.role == Role::kWorker && !job_failed && st.client->connected()) {
    const double deadline_s = std::min(st.options.shutdown_timeout_s, st.options.heartbeat_timeout_s);
    bool relaying = false;
    {
      std::lock_guard<std::mutex> lock(st.mutex);
      relaying = st.worker_status.has_value();
    }
    // dtrun's summary: the scheduler's copy of this worker's numbers ends
    // with its last batch, not a heartbeat interval before. An aid: its
    // failure does not keep the goodbye from going.
    if (relaying) {
      try {
        st.client->call(st.heartbeat_message(), to_ms(deadline_s));
      } catch (const Error&) {
      }
    }
    try {
      flatbuffers::FlatBufferBuilder fbb(64);
      Message reply = st.client->call(make_message(fbb, wire::CreateShutdown(fbb, to_wire(st.job.role), st.rank)),
                                      to_ms(deadline_s));
      Frame::parse(std::move(reply)).expect<wire::Ack>();
    } catch (const Error&) {
      // The scheduler may already have ended the job (a lost peer); leaving
      // is all that is left to do.
    }
  }
  st.stop_heartbeats();
}

}  // namespace dt::ps
