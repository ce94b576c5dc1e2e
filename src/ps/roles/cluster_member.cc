#include "ps/roles/cluster_member.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "ps/job/environment_options.h"
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

  mutable std::mutex mutex;
  std::condition_variable cv;
  std::vector<LostNode> lost;
  std::vector<LostCallback> callbacks;
  std::vector<LostNode> departed;
  std::vector<LostCallback> departed_callbacks;
  // Server changes so far, in order, and who hears of them.
  std::vector<ServerNews> server_news;
  size_t rejoins_seen = 0;  // entries of HeartbeatReply.rejoined taken
  std::vector<std::function<void(const ServerNews&)>> server_callbacks;
  uint32_t awaiting_admission = 0;  // HeartbeatReply.awaiting_admission, latest
  bool stop_requested = false;  // the scheduler said the job ended
  bool stopping = false;        // this node is leaving: the thread exits
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
  Clock::time_point quick_beats_until;  // ask_for_news(): every 50 ms until then
  std::thread heartbeat_thread;

  void heartbeat_loop();
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
  // Error(kPeerLost) with the first lost node's message, if any.
  void check_peers() const {
    std::lock_guard<std::mutex> lock(mutex);
    if (!lost.empty()) throw Error(ErrorCode::kPeerLost, lost.front().message());
  }
  void add_lost(const LostNode& node);
  // Returns whether the node is news.
  bool add_departed(const LostNode& node);
  void add_server_news(const ServerNews& news);
  // A heartbeat reply's departed and rejoined nodes, news in order.
  void take_changes(const wire::HeartbeatReply& reply);
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
      std::unique_lock<std::mutex> lock(mutex);
      if (e.code() == ErrorCode::kNetwork) {
        // The heartbeat thread names the loss within a moment of the close.
        cv.wait_for(lock, to_ms(options.heartbeat_timeout_s), [&] { return !lost.empty(); });
      }
      if (!lost.empty()) throw Error(ErrorCode::kPeerLost, lost.front().message());
      throw;
    }
  }
};

void ClusterMember::State::add_lost(const LostNode& node) {
  std::vector<LostCallback> to_call;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const LostNode& l : lost) {
      if (l.role == node.role && l.rank == node.rank) return;
    }
    lost.push_back(node);
    to_call = callbacks;
  }
  cv.notify_all();
  for (const LostCallback& cb : to_call) cb(node);
}

bool ClusterMember::State::add_departed(const LostNode& node) {
  // A worker that joined the running job in the place of a lost one hears
  // of its predecessor's loss (same rank, another process): not its own.
  if (node.role == job.role && node.rank == rank && (node.pid == 0 || node.pid == ::getpid())) {
    // The others go on without this node: a worker must not push into
    // their rounds any more, nor a server answer for parts its replicas now
    // serve.
    LostNode self = node;
    self.reason = "the scheduler declared this " + std::string(role_name(node.role)) + " lost (" + node.reason +
                  ") and the job goes on without it";
    add_lost(self);
    return false;
  }
  std::vector<LostCallback> to_call;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const LostNode& d : departed) {
      // A rank lost again after a worker joined in its place is news.
      if (d.role == node.role && d.rank == node.rank && d.pid == node.pid) return false;
    }
    departed.push_back(node);
    to_call = departed_callbacks;
  }
  for (const LostCallback& cb : to_call) cb(node);
  return true;
}

void ClusterMember::State::add_server_news(const ServerNews& news) {
  std::vector<std::function<void(const ServerNews&)>> to_call;
  {
    std::lock_guard<std::mutex> lock(mutex);
    server_news.push_back(news);
    to_call = server_callbacks;
  }
  for (const auto& cb : to_call) cb(news);
}

void ClusterMember::State::take_changes(const wire::HeartbeatReply& r) {
  // Departures and rejoins merged as server_changes() orders them: a rejoin
  // that came after d server departures is news after the d-th.
  std::vector<RejoinedServer> rejoined;
  if (r.rejoined() != nullptr) {
    for (const auto* b : *r.rejoined()) rejoined.push_back(read_rejoined_server(*b));
  }
  uint32_t departures = 0;
  const auto rejoins_up_to = [&](uint32_t count) {
    for (; rejoins_seen < rejoined.size() && rejoined[rejoins_seen].after_departures <= count; ++rejoins_seen) {
      const RejoinedServer& b = rejoined[rejoins_seen];
      add_server_news(ServerNews{ServerChange{b.node.rank, true}, LostNode{}, b.node});
    }
  };
  if (r.departed() != nullptr) {
    for (const auto* l : *r.departed()) {
      const LostNode node = read_lost_node(*l);
      if (node.role == Role::kServer) rejoins_up_to(departures);
      const bool news = add_departed(node);
      if (node.role != Role::kServer) continue;
      ++departures;
      // (A server rejoining hears of its predecessor's departure too, as
      // news: another process. That change is in the sequence every node
      // counts.)
      if (news) add_server_news(ServerNews{ServerChange{node.rank, false}, node, NodeInfo{}});
    }
  }
  rejoins_up_to(~uint32_t{0});
}

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
        add_lost(scheduler_lost("connection to the scheduler closed"));
        return;
      }
    }
    uint32_t copies_restored = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      copies_restored = this->copies_restored;
    }
    try {
      flatbuffers::FlatBufferBuilder fbb(64);
      Message reply = client->call(make_message(fbb, wire::CreateHeartbeat(fbb, to_wire(job.role), rank, copies_restored)),
                                   to_ms(options.heartbeat_timeout_s));
      const Frame frame = Frame::parse(std::move(reply));
      const wire::HeartbeatReply& r = frame.expect<wire::HeartbeatReply>();
      last_ok = Clock::now();
      if (r.lost() != nullptr) {
        for (const auto* l : *r.lost()) add_lost(read_lost_node(*l));
      }
      take_changes(r);
      {
        std::lock_guard<std::mutex> lock(mutex);
        awaiting_admission = r.awaiting_admission();
      }
      if (r.shutdown()) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          stop_requested = true;
        }
        cv.notify_all();
      }
    } catch (const Error& e) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        // Once the job ended or this node is leaving, the scheduler may be gone.
        if (stopping || stop_requested) return;
      }
      const double silent = std::chrono::duration<double>(Clock::now() - last_ok).count();
      if (silent >= options.heartbeat_timeout_s) {
        add_lost(scheduler_lost("no heartbeat reply for " + seconds_text(silent) + " (" + e.what() + ")"));
      }
    }
  }
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
    const Frame frame = Frame::parse(std::move(reply));
    st.table = read_node_table(frame.expect<wire::NodeTable>());
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
  verbose_log(1, self + ": node table from the scheduler at " + job.root_url);
  for (const std::string& line : node_table_lines(st.table)) verbose_log(1, self + ":   " + line);
  // A scheduler that dies closes this connection: seen at once, like any
  // other node's death, not after the heartbeat timeout. Its closing after
  // the job ended (or after this node left) is no loss.
  st.client->on_disconnect([&st] {
    {
      std::lock_guard<std::mutex> lock(st.mutex);
      if (st.stopping || st.stop_requested || st.shut_down) return;
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
  bool failover = false;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    st.stopping = true;
    failover = !st.departed.empty() || !st.lost.empty();
  }
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
  check_peers();
  // A regroup is not one of the numbered barriers: it takes no id.
  const uint64_t id = regroup ? 0 : take_barrier_id();
  flatbuffers::FlatBufferBuilder fbb(128 + data.size());
  auto body = wire::CreateBarrier(fbb, rank, id, fbb.CreateVector(data), regroup, generation, admission);
  Message reply = call_scheduler(make_message(fbb, body));
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

uint32_t ClusterMember::workers_awaiting_admission() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->awaiting_admission;
}

void ClusterMember::on_lost(LostCallback callback) {
  std::vector<LostNode> already;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->callbacks.push_back(callback);
    already = state_->lost;
  }
  for (const LostNode& l : already) callback(l);
}

void ClusterMember::on_departed(LostCallback callback) {
  std::vector<LostNode> already;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->departed_callbacks.push_back(callback);
    already = state_->departed;
  }
  for (const LostNode& d : already) callback(d);
}

void ClusterMember::on_server_change(std::function<void(const ServerNews&)> callback) {
  std::vector<ServerNews> already;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->server_callbacks.push_back(callback);
    already = state_->server_news;
  }
  for (const ServerNews& n : already) callback(n);
}

void ClusterMember::wait_for_scheduler_gone(double timeout_s) const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
    return std::any_of(state_->lost.begin(), state_->lost.end(),
                       [](const LostNode& l) { return l.role == Role::kScheduler; });
  });
}

std::vector<LostNode> ClusterMember::departed() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->departed;
}

std::vector<LostNode> ClusterMember::lost() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->lost;
}

void ClusterMember::check_peers() const { state_->check_peers(); }

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

void ClusterMember::wait_for_stop() {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mutex);
  st.cv.wait(lock, [&] { return st.stop_requested || !st.lost.empty(); });
  if (!st.lost.empty()) throw Error(ErrorCode::kPeerLost, st.lost.front().message());
}

void ClusterMember::shutdown() {
  State& st = *state_;
  bool job_failed = false;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (st.shut_down) return;
    st.shut_down = true;
    job_failed = !st.lost.empty();
  }
  // After a lost node the scheduler ends the job and may be gone already: a
  // goodbye would only wait for a reply that never comes. Even otherwise the
  // wait is bounded by the heartbeat timeout, after which a silent scheduler
  // counts as lost anyway.
  if (st.job.role == Role::kWorker && !job_failed && st.client->connected()) {
    try {
      flatbuffers::FlatBufferBuilder fbb(64);
      const double deadline_s = std::min(st.options.shutdown_timeout_s, st.options.heartbeat_timeout_s);
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
