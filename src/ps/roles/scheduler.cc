#include "ps/roles/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <unistd.h>

#include "core/error.h"
#include "ps/job/environment_options.h"
#include "ps/key_placement.h"
#include "ps/roles/node_table.h"
#include "ps/transport/frame.h"
#include "ps/transport/rate_limited_log.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Regroups (wire Barrier.regroup) wait beside the numbered barriers, under
// ids no worker's barrier counter reaches: this bit and the generation.
constexpr uint64_t kRegroupBit = uint64_t{1} << 63;
// With kRegroupBit: an admission (workers joining an all-reduce job let in).
constexpr uint64_t kAdmissionBit = uint64_t{1} << 62;
bool is_regroup(uint64_t id) { return (id & kRegroupBit) != 0; }
bool is_admission(uint64_t id) { return is_regroup(id) && (id & kAdmissionBit) != 0; }
std::string barrier_name(uint64_t id) {
  if (is_admission(id)) return "admission at generation " + std::to_string(id & ~(kRegroupBit | kAdmissionBit));
  return is_regroup(id) ? "regroup " + std::to_string(id & ~kRegroupBit) : "barrier " + std::to_string(id);
}

std::string port_of(const std::string& url) {
  const size_t colon = url.rfind(':');
  return colon == std::string::npos ? std::string() : url.substr(colon + 1);
}

}  // namespace

struct Scheduler::State {
  JobConfig job;
  PsOptions options;
  std::unique_ptr<RequestServer> server;
  std::string url;

  std::mutex mutex;
  std::condition_variable cv;
  Clock::time_point started = Clock::now();

  // Registration phase: nodes waiting for the table (deferred replies).
  struct Registration {
    NodeInfo info;
    int requested_rank;
    uint32_t pipe;
    RequestServer::Reply reply;
    Clock::time_point since;  // server joins: when it registered
  };
  std::vector<Registration> registrations;
  bool published = false;

  // After publication: one entry per node.
  struct Member {
    NodeInfo info;
    // The connection it registered on: its identity. Messages in its name on
    // any other connection are refused; nothing ever moves it.
    uint32_t pipe = 0;
    uint64_t next_barrier = 0;  // workers: the only barrier id it may enter next
    uint64_t first_barrier = 0;  // workers: barriers before this one do not wait for it (it joined later)
    Clock::time_point last_heartbeat;
    bool left = false;  // sent Shutdown (worker) or was told to stop (server)
    bool told = false;  // got a heartbeat reply listing the loss / the stop
    bool lost = false;
    // Its connection closed after it left: a stopped server closes only
    // once the reply telling it to stop has arrived.
    bool disconnected = false;
    // Workers of a replicated job: after how many server changes every
    // part it initialised had its new copy filled (Heartbeat.copies_restored).
    uint32_t copies_restored = 0;
    // A server that rejoined the running job is announced to the others
    // only at its first heartbeat: it sends none before it has the job's
    // settings and can serve.
    bool announced = true;
    // It was lost before it was announced (it took too long to get the
    // settings, say): its later heartbeats are told so, and it ends.
    bool dropped_while_rejoining = false;
    // A worker that joined a job without servers in a departed one's place:
    // it has no weights yet, and waits for the workers in the job to let it
    // in at their next step (Barrier.admission). Until then no barrier or
    // regroup waits for it, and losing it frees the place again.
    bool awaiting_admission = false;
  };
  std::map<std::pair<int, int>, Member> members;  // (role, rank)

  struct Waiter {
    int rank;
    RequestServer::Reply reply;
    // An all-gather barrier's contribution (wire Barrier.data present).
    std::optional<std::vector<uint8_t>> data;
  };
  std::map<uint64_t, std::vector<Waiter>> barriers;
  std::map<uint64_t, Clock::time_point> barrier_started;

  std::vector<LostNode> lost;
  // Workers lost under DT_WORKER_LOSS=continue, a server lost under
  // DT_SERVER_REPLICATION=1: the job goes on without them.
  std::vector<LostNode> departed;
  // Servers started again that took a departed server's place, announced
  // (HeartbeatReply.rejoined).
  std::vector<RejoinedServer> rejoined;
  // Workers let into a job without servers after joining it (admissions).
  uint64_t admitted = 0;
  // Servers registering to rejoin before the scheduler has declared the
  // loss of the one they replace (a launcher restarts a server the moment
  // it dies): they wait for a place, up to startup_timeout_s.
  std::vector<Registration> server_joins;
  Clock::time_point first_loss;
  bool stopping = false;  // every worker sent Shutdown
  Clock::time_point stop_time;
  std::optional<Error> failure;  // ends run() with this error
  RateLimitedLog log{"disttrain scheduler"};

  void handle(Message request, RequestServer::Reply reply);
  void on_register(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply);
  // Error(kInvalidArgument) when the node read another job layout.
  void check_layout(const wire::Register& r) const;
  // DT_WORKER_LOSS=continue: a worker registering after publication takes
  // the place of one the job went on without, and joins the running job.
  void on_join(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply);
  // DT_SERVER_REPLICATION=1: a server registering after publication takes
  // the place of a departed one, or waits for one to depart.
  void on_server_join(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply);
  // Gives waiting server registrations the places of departed servers.
  void seat_server_joins();
  // The job's server changes so far (node_table.h's server_changes).
  std::vector<ServerChange> changes() const { return server_changes(departed, rejoined); }
  NodeTable table_for(int rank, bool joined) const;
  // How many workers barrier id waits for.
  size_t workers_at_barrier(uint64_t id) const;
  void publish();
  // The member the message speaks for, if it arrived on that member's own
  // connection; Error naming the rule otherwise.
  Member& speaker(Role role, int rank, uint32_t pipe, const char* what);
  void on_heartbeat(const wire::Heartbeat& h, uint32_t pipe, RequestServer::Reply& reply);
  void on_barrier(const wire::Barrier& b, uint32_t pipe, RequestServer::Reply& reply);
  // An all-reduce job's workers meeting again after a loss (Barrier.regroup).
  void on_regroup(const wire::Barrier& b, Member& m, RequestServer::Reply& reply);
  // Workers of an all-reduce job letting in the ones that joined it, and
  // those waiting to be let in (Barrier.admission).
  void on_admission(const wire::Barrier& b, Member& m, RequestServer::Reply& reply);
  // Workers the job went on without (DT_WORKER_LOSS=continue).
  uint64_t departed_workers() const;
  // Adds a worker's data to the all-gather under id (a regroup or an
  // admission) and completes what is ready; `what` names the call in the
  // error for a worker there twice.
  void gather_for(uint64_t id, const wire::Barrier& b, Member& m, RequestServer::Reply& reply, const char* what);
  // A worker's place in every barrier no longer counts; the others may all
  // be there now.
  void leave_barriers(const Member& m);
  // Whether worker `rank` joined a job without servers and waits to be let in.
  bool waits_to_be_let_in(int rank) const;
  // What a regroup is counted at: workers departed plus workers let in.
  uint64_t generation() const { return departed_workers() + admitted; }
  // Workers that joined a job without servers and wait to be let in.
  uint32_t awaiting_admission() const;
  void complete_barrier(uint64_t id, std::vector<Waiter>& waiters);
  void on_shutdown(const wire::Shutdown& s, uint32_t pipe, RequestServer::Reply& reply);
  void on_pipe_closed(uint32_t pipe);
  void mark_lost(Member& m, const std::string& reason);
  // DT_WORKER_LOSS=continue: m (a worker) leaves the job, which goes on;
  // likewise a server under DT_SERVER_REPLICATION=1.
  void depart(Member& m, const std::string& reason);
  // Workers neither departed nor lost: the ones a barrier and the stop wait for.
  int live_workers() const;
  // Servers not departed (DT_SERVER_REPLICATION=1) nor lost, nor still
  // rejoining.
  int live_servers() const;
  // DT_SERVER_REPLICATION=1: whether every part that server holds (its own
  // and the copies of its predecessor's) has its other copy on a server
  // still in the job.
  bool copies_survive(int server) const;
  // Logs once every live worker has reported the new copies made after the
  // latest server loss filled (Heartbeat.copies_restored).
  void announce_copies_restored();
  uint32_t copies_restored_announced = 0;
  void complete_ready_barriers();
  void stop_if_every_worker_left();
  void fail_registrations(const Error& error);
  Message heartbeat_reply();
};

void Scheduler::State::handle(Message request, RequestServer::Reply reply) {
  const uint32_t pipe = request.pipe_id();
  std::optional<Frame> frame;
  try {
    frame.emplace(Frame::parse(std::move(request)));
  } catch (const Error& e) {
    log.print(std::string("rejected a message: ") + e.what());
    reply(make_error_reply(e.code(), e.what()));
    return;
  }
  verbose_log(2, std::string("scheduler: ") + body_name(frame->type()) + " on connection " + std::to_string(pipe));
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
      case wire::Body::Shutdown:
        on_shutdown(*frame->body<wire::Shutdown>(), pipe, reply);
        break;
      default:
        throw Error(ErrorCode::kProtocol, std::string("the scheduler does not serve ") + body_name(frame->type()) + " messages");
    }
  } catch (const Error& e) {
    log.print(std::string("refused ") + body_name(frame->type()) + " on connection " + std::to_string(pipe) + ": " +
              e.what());
    reply(make_error_reply(e.code(), e.what()));
  }
  cv.notify_all();
}

void Scheduler::State::check_layout(const wire::Register& r) const {
  if (r.num_servers() != job.num_servers || r.num_workers() != job.num_workers) {
    throw Error(ErrorCode::kInvalidArgument,
                "mismatched job layout: this node has DMLC_NUM_SERVER=" + std::to_string(r.num_servers()) +
                    " DMLC_NUM_WORKER=" + std::to_string(r.num_workers()) + ", the scheduler has " +
                    std::to_string(job.num_servers) + " and " + std::to_string(job.num_workers));
  }
}

void Scheduler::State::on_register(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply) {
  if (published) {
    on_join(r, pipe, reply);
    return;
  }
  if (failure) throw *failure;
  const Role role = from_wire(r.role());
  if (role == Role::kScheduler) throw Error(ErrorCode::kInvalidArgument, "a second scheduler tried to register");
  check_layout(r);
  const int limit = role == Role::kServer ? job.num_servers : job.num_workers;
  int count = 0;
  for (const Registration& g : registrations) {
    if (g.info.role != role) continue;
    ++count;
    if (role == Role::kWorker && r.requested_rank() >= 0 && g.requested_rank == r.requested_rank()) {
      throw Error(ErrorCode::kInvalidArgument, "DMLC_WORKER_ID=" + std::to_string(r.requested_rank()) +
                                                   " is already taken by " + g.info.describe());
    }
  }
  if (count >= limit) {
    throw Error(ErrorCode::kInvalidArgument, std::string("more ") + role_name(role) + "s registered than the " +
                                                 std::to_string(limit) + " the job has (DMLC_NUM_" +
                                                 (role == Role::kServer ? "SERVER" : "WORKER") + ")");
  }
  if (role == Role::kWorker && r.requested_rank() >= job.num_workers) {
    throw Error(ErrorCode::kInvalidArgument, "DMLC_WORKER_ID=" + std::to_string(r.requested_rank()) +
                                                 " is out of range for " + std::to_string(job.num_workers) + " workers");
  }
  Registration g;
  g.info.role = role;
  g.info.host = r.host() == nullptr ? std::string() : r.host()->str();
  g.info.pid = r.pid();
  if (r.data_urls() != nullptr) {
    for (const auto* u : *r.data_urls()) g.info.data_urls.push_back(u->str());
  }
  g.requested_rank = role == Role::kWorker ? r.requested_rank() : -1;
  g.pipe = pipe;
  g.reply = reply;
  verbose_log(1, "scheduler: " + std::string(role_name(role)) + " (pid " + std::to_string(g.info.pid) + " on host " +
                     g.info.host + ") registered on connection " + std::to_string(pipe) + ", " +
                     std::to_string(registrations.size() + 1) + " of " +
                     std::to_string(job.num_servers + job.num_workers) + " nodes");
  registrations.push_back(std::move(g));
  if (static_cast<int>(registrations.size()) == job.num_servers + job.num_workers) publish();
}

void Scheduler::State::on_join(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply) {
  const Role role = from_wire(r.role());
  if (role == Role::kServer && options.server_replicas > 0) {
    on_server_join(r, pipe, reply);
    return;
  }
  if (role != Role::kWorker || options.worker_loss != WorkerLossPolicy::kContinue) {
    throw Error(ErrorCode::kBadState, std::string("registration of a ") + role_name(role) +
                                          " after the job started: the node table is already published (only a "
                                          "worker may join a running job, in the place of a lost one, under "
                                          "DT_WORKER_LOSS=continue, or a server under DT_SERVER_REPLICATION=1)");
  }
  check_layout(r);
  if (failure || !lost.empty() || stopping) {
    throw Error(ErrorCode::kClosed, "a worker registered to join a job that is ending");
  }
  // Its own place when it asks for one (a restarted worker keeps its
  // DMLC_WORKER_ID, and with it its data shard), else the first free one.
  Member* place = nullptr;
  for (auto& [key, m] : members) {
    if (m.info.role != Role::kWorker || (r.requested_rank() >= 0 && m.info.rank != r.requested_rank())) continue;
    if (m.lost && !m.left) {
      place = &m;
      break;
    }
  }
  if (place == nullptr) {
    throw Error(ErrorCode::kBadState,
                r.requested_rank() >= 0
                    ? "worker " + std::to_string(r.requested_rank()) +
                          " registered after the job started, and the job has not lost worker " +
                          std::to_string(r.requested_rank()) + " (only a lost worker's place can be taken)"
                    : std::string("a worker registered after the job started, and the job has lost no worker whose "
                                  "place it could take"));
  }
  // Barriers entered already are finished without it.
  uint64_t first_barrier = 0;
  for (const auto& [key, m] : members) {
    if (m.info.role == Role::kWorker && !m.lost) first_barrier = std::max(first_barrier, m.next_barrier);
  }
  const NodeInfo predecessor = place->info;
  place->info.host = r.host() == nullptr ? std::string() : r.host()->str();
  place->info.pid = r.pid();
  place->pipe = pipe;
  place->next_barrier = first_barrier;
  place->first_barrier = first_barrier;
  place->last_heartbeat = Clock::now();
  place->lost = place->left = place->told = place->disconnected = false;
  // A job without servers: the workers in it hold the weights, and let it
  // in at a step they agree on (an all-reduce job's HostAllreduceKVStore).
  place->awaiting_admission = job.num_servers == 0;
  if (place->awaiting_admission) {
    std::fprintf(stderr,
                 "disttrain scheduler: %s joined the running job in the place of %s; it waits for the %d workers in "
                 "the job to let it in at their next step\n",
                 place->info.describe().c_str(), predecessor.describe().c_str(), live_workers());
  } else {
    std::fprintf(stderr,
                 "disttrain scheduler: %s joined the running job in the place of %s; the job goes on with %d of %d "
                 "workers\n",
                 place->info.describe().c_str(), predecessor.describe().c_str(), live_workers(), job.num_workers);
  }
  NodeTable table = table_for(place->info.rank, true);
  table.first_barrier = first_barrier;
  flatbuffers::FlatBufferBuilder fbb(1024);
  reply(make_message(fbb, write_node_table(fbb, table)));
}

NodeTable Scheduler::State::table_for(int rank, bool joined) const {
  NodeTable table;
  table.num_servers = job.num_servers;
  table.num_workers = job.num_workers;
  table.scheduler_pid = static_cast<int64_t>(::getpid());
  table.your_rank = rank;
  table.joined_running_job = joined;
  for (const auto& [key, m] : members) (m.info.role == Role::kServer ? table.servers : table.workers).push_back(m.info);
  return table;
}

void Scheduler::State::on_server_join(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply) {
  check_layout(r);
  if (failure || !lost.empty() || stopping) {
    throw Error(ErrorCode::kBadState, "a server registered to rejoin a job that is ending");
  }
  Registration g;
  g.info.role = Role::kServer;
  g.info.host = r.host() == nullptr ? std::string() : r.host()->str();
  g.info.pid = r.pid();
  if (r.data_urls() != nullptr) {
    for (const auto* u : *r.data_urls()) g.info.data_urls.push_back(u->str());
  }
  g.requested_rank = -1;
  g.pipe = pipe;
  g.reply = reply;
  // Deferred: answered once a departed server's place is free (at once,
  // usually), or with an error after startup_timeout_s (run()).
  g.since = Clock::now();
  server_joins.push_back(std::move(g));
  seat_server_joins();
}

void Scheduler::State::seat_server_joins() {
  while (!server_joins.empty()) {
    Member* place = nullptr;
    for (auto& [key, m] : members) {
      if (m.info.role == Role::kServer && m.lost) {
        place = &m;
        break;
      }
    }
    if (place == nullptr) return;
    Registration g = std::move(server_joins.front());
    server_joins.erase(server_joins.begin());
    const NodeInfo predecessor = place->info;
    g.info.rank = predecessor.rank;
    place->info = g.info;
    place->pipe = g.pipe;
    place->last_heartbeat = Clock::now();
    place->lost = place->left = place->told = place->disconnected = false;
    place->announced = false;
    place->dropped_while_rejoining = false;
    std::fprintf(stderr,
                 "disttrain scheduler: %s registered to rejoin the running job in the place of %s; it is announced "
                 "once it has the job's settings (DT_SERVER_REPLICATION=1)\n",
                 place->info.describe().c_str(), predecessor.describe().c_str());
    flatbuffers::FlatBufferBuilder fbb(1024);
    g.reply(make_message(fbb, write_node_table(fbb, table_for(place->info.rank, true))));
  }
}

size_t Scheduler::State::workers_at_barrier(uint64_t id) const {
  // A regroup gathers every worker still in the job: not the ones that said
  // goodbye, which have no more collectives to run.
  // Nothing waits for the workers waiting to be let in (an admission takes
  // the ones there, complete_ready_barriers).
  if (is_regroup(id)) {
    return static_cast<size_t>(std::count_if(members.begin(), members.end(), [](const auto& kv) {
      const Member& m = kv.second;
      return m.info.role == Role::kWorker && !m.lost && !m.left && !m.awaiting_admission;
    }));
  }
  return static_cast<size_t>(std::count_if(members.begin(), members.end(), [id](const auto& kv) {
    const Member& m = kv.second;
    return m.info.role == Role::kWorker && !m.lost && !m.awaiting_admission && m.first_barrier <= id;
  }));
}

void Scheduler::State::publish() {
  NodeTable table;
  table.num_servers = job.num_servers;
  table.num_workers = job.num_workers;
  table.scheduler_pid = static_cast<int64_t>(::getpid());
  std::vector<Registration*> servers, workers;
  for (Registration& g : registrations) (g.info.role == Role::kServer ? servers : workers).push_back(&g);
  const bool all_requested = std::all_of(workers.begin(), workers.end(), [](Registration* g) { return g->requested_rank >= 0; });
  if (all_requested) {
    std::sort(workers.begin(), workers.end(), [](Registration* a, Registration* b) { return a->requested_rank < b->requested_rank; });
  }
  for (size_t i = 0; i < servers.size(); ++i) servers[i]->info.rank = static_cast<int>(i);
  for (size_t i = 0; i < workers.size(); ++i) workers[i]->info.rank = static_cast<int>(i);
  for (Registration* g : servers) table.servers.push_back(g->info);
  for (Registration* g : workers) table.workers.push_back(g->info);
  verbose_log(1, "scheduler: node table published");
  for (const std::string& line : node_table_lines(table)) verbose_log(1, "scheduler:   " + line);
  const Clock::time_point now = Clock::now();
  for (Registration& g : registrations) {
    Member m;
    m.info = g.info;
    m.pipe = g.pipe;
    m.last_heartbeat = now;
    members[{static_cast<int>(g.info.role), g.info.rank}] = m;
    table.your_rank = g.info.rank;
    flatbuffers::FlatBufferBuilder fbb(1024);
    g.reply(make_message(fbb, write_node_table(fbb, table)));
  }
  registrations.clear();
  published = true;
}

Message Scheduler::State::heartbeat_reply() {
  flatbuffers::FlatBufferBuilder fbb(256);
  std::vector<flatbuffers::Offset<wire::LostNode>> list;
  for (const LostNode& l : lost) list.push_back(write_lost_node(fbb, l));
  std::vector<flatbuffers::Offset<wire::LostNode>> gone;
  for (const LostNode& l : departed) gone.push_back(write_lost_node(fbb, l));
  std::vector<flatbuffers::Offset<wire::RejoinedServer>> back;
  for (const RejoinedServer& r : rejoined) back.push_back(write_rejoined_server(fbb, r));
  return make_message(fbb, wire::CreateHeartbeatReply(fbb, fbb.CreateVector(list), stopping, fbb.CreateVector(gone),
                                                      fbb.CreateVector(back), awaiting_admission()));
}

int Scheduler::State::live_workers() const {
  return static_cast<int>(std::count_if(members.begin(), members.end(), [](const auto& kv) {
    return kv.second.info.role == Role::kWorker && !kv.second.lost && !kv.second.awaiting_admission;
  }));
}

uint32_t Scheduler::State::awaiting_admission() const {
  // The ones in an admission: ready for the workers in the job, which wait
  // for nobody once they come.
  uint32_t ready = 0;
  for (const auto& [id, waiters] : barriers) {
    if (!is_admission(id)) continue;
    for (const Waiter& w : waiters) ready += waits_to_be_let_in(w.rank) ? 1 : 0;
  }
  return ready;
}

void Scheduler::State::announce_copies_restored() {
  const std::vector<ServerChange> all = changes();
  uint32_t restored = static_cast<uint32_t>(all.size());
  for (const auto& [id, m] : members) {
    if (m.info.role == Role::kWorker && !m.lost) restored = std::min(restored, m.copies_restored);
  }
  if (restored <= copies_restored_announced || live_servers() < 2) return;
  copies_restored_announced = restored;
  const auto rejoins = std::count_if(all.begin(), all.begin() + restored, [](const ServerChange& c) { return c.rejoined; });
  const std::string after = rejoins == 0 ? "the loss of " + std::to_string(restored) + " server(s)"
                                         : std::to_string(restored - rejoins) + " server loss(es) and " +
                                               std::to_string(rejoins) + " rejoin(s)";
  std::fprintf(stderr,
               "disttrain scheduler: every worker's key parts have two holders again after %s: their new copies are "
               "filled (DT_SERVER_REPLICATION=1)\n",
               after.c_str());
}

bool Scheduler::State::copies_survive(int server) const {
  const int n = job.num_servers;
  if (n < 2) return false;
  // The job's server changes so far; after how many of them every worker
  // has seen its parts' new copies filled.
  const std::vector<ServerChange> all = changes();
  uint32_t restored = static_cast<uint32_t>(all.size());
  for (const auto& [id, m] : members) {
    if (m.info.role == Role::kWorker && !m.lost) restored = std::min(restored, m.copies_restored);
  }
  // Where every part is held for certain: its holders after the first
  // `restored` changes (ps::part_holders; before any, its server and
  // replica). A holder whose state is gone since (lost in a later change,
  // or the server lost now) does not count; the part survives this loss
  // when another holder is left.
  const std::vector<ServerChange> settled(all.begin(), all.begin() + restored);
  std::vector<bool> gone(static_cast<size_t>(n), false);
  for (size_t i = restored; i < all.size(); ++i) {
    if (!all[i].rejoined) gone[static_cast<size_t>(all[i].server)] = true;
  }
  gone[static_cast<size_t>(server)] = true;
  for (int home = 0; home < n; ++home) {
    bool kept = false;
    for (const PartHolder& holder : part_holders(home, n, settled)) {
      kept = kept || !gone[static_cast<size_t>(holder.server)];
    }
    if (!kept) return false;
  }
  return true;
}

int Scheduler::State::live_servers() const {
  // A server still rejoining (not announced) serves nothing yet.
  return static_cast<int>(std::count_if(members.begin(), members.end(), [](const auto& kv) {
    return kv.second.info.role == Role::kServer && !kv.second.lost && kv.second.announced;
  }));
}

Scheduler::State::Member& Scheduler::State::speaker(Role role, int rank, uint32_t pipe, const char* what) {
  auto it = members.find({static_cast<int>(role), rank});
  if (!published || it == members.end()) {
    throw Error(ErrorCode::kBadState,
                std::string(what) + " from unregistered " + role_name(role) + " " + std::to_string(rank));
  }
  Member& m = it->second;
  if (m.pipe != pipe) {
    throw Error(ErrorCode::kProtocol, std::string(what) + " in the name of " + m.info.describe() +
                                          " on a connection it did not register on (rule: a member speaks only on "
                                          "its own connection)");
  }
  return m;
}

void Scheduler::State::on_heartbeat(const wire::Heartbeat& h, uint32_t pipe, RequestServer::Reply& reply) {
  Member& m = speaker(from_wire(h.role()), h.rank(), pipe, "heartbeat");
  if (m.dropped_while_rejoining) {
    throw Error(ErrorCode::kPeerLost, m.info.describe() + " was dropped before it had rejoined the job (no heartbeat "
                                                          "within the heartbeat timeout): start it again");
  }
  m.last_heartbeat = Clock::now();
  if (!m.announced) {
    // A rejoined server beats once it has the job's settings and serves:
    // from now on the workers route new copies to it.
    m.announced = true;
    const auto departures = std::count_if(departed.begin(), departed.end(),
                                          [](const LostNode& l) { return l.role == Role::kServer; });
    rejoined.push_back(RejoinedServer{m.info, static_cast<uint32_t>(departures)});
    std::fprintf(stderr,
                 "disttrain scheduler: %s rejoined the running job; the job has %d of %d servers again, and the "
                 "rejoined one takes new copies of the parts left with one holder (DT_SERVER_REPLICATION=1)\n",
                 m.info.describe().c_str(), live_servers(), job.num_servers);
  }
  if (m.info.role == Role::kWorker && h.copies_restored() > m.copies_restored) {
    m.copies_restored = h.copies_restored();
    announce_copies_restored();
  }
  if (!lost.empty() || (stopping && m.info.role == Role::kServer)) m.told = true;
  if (stopping && m.info.role == Role::kServer) m.left = true;
  reply(heartbeat_reply());
}

void Scheduler::State::on_barrier(const wire::Barrier& b, uint32_t pipe, RequestServer::Reply& reply) {
  if (!published) throw Error(ErrorCode::kBadState, "barrier before the node table was published");
  if (b.rank() < 0 || b.rank() >= job.num_workers) {
    throw Error(ErrorCode::kInvalidArgument, "barrier from worker rank " + std::to_string(b.rank()) + " out of range");
  }
  Member& m = speaker(Role::kWorker, b.rank(), pipe, "barrier");
  if (m.left) throw Error(ErrorCode::kBadState, "barrier from " + m.info.describe() + " after its Shutdown");
  if (m.lost) throw Error(ErrorCode::kPeerLost, "barrier from " + m.info.describe() + ", which the job already lost");
  if (b.regroup() && b.admission()) {
    on_admission(b, m, reply);
    return;
  }
  if (b.regroup()) {
    on_regroup(b, m, reply);
    return;
  }
  if (m.awaiting_admission) {
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
  std::vector<Waiter>& waiters = barriers[b.barrier_id()];
  if (waiters.empty()) barrier_started[b.barrier_id()] = Clock::now();
  std::optional<std::vector<uint8_t>> data;
  if (b.data() != nullptr) data.emplace(b.data()->begin(), b.data()->end());
  waiters.push_back(Waiter{b.rank(), reply, std::move(data)});
  complete_ready_barriers();
}

uint64_t Scheduler::State::departed_workers() const {
  return static_cast<uint64_t>(
      std::count_if(departed.begin(), departed.end(), [](const LostNode& l) { return l.role == Role::kWorker; }));
}

void Scheduler::State::on_regroup(const wire::Barrier& b, Member& m, RequestServer::Reply& reply) {
  if (!lost.empty()) throw Error(ErrorCode::kPeerLost, lost.front().message());
  if (b.data() == nullptr) throw Error(ErrorCode::kProtocol, "regroup from " + m.info.describe() + " without data");
  // Every worker must regroup over the same workers: one that has not heard
  // of the latest loss yet asks again once its heartbeat brings it.
  if (m.awaiting_admission) {
    throw Error(ErrorCode::kBadState, "regroup of " + m.info.describe() +
                                          ", which waits to be let into the job (rule: a joined worker's first call "
                                          "is the admission)");
  }
  if (b.regroup_generation() != generation()) {
    throw Error(ErrorCode::kBadState, "regroup of " + m.info.describe() + " at generation " +
                                          std::to_string(b.regroup_generation()) + ", but the job is at " +
                                          std::to_string(generation()) + " (" + std::to_string(departed_workers()) +
                                          " workers departed, " + std::to_string(admitted) +
                                          " let in; ask again at that count)");
  }
  gather_for(kRegroupBit | b.regroup_generation(), b, m, reply, "regrouped");
}

void Scheduler::State::gather_for(uint64_t id, const wire::Barrier& b, Member& m, RequestServer::Reply& reply,
                                  const char* what) {
  std::vector<Waiter>& waiters = barriers[id];
  for (const Waiter& w : waiters) {
    if (w.rank == b.rank()) throw Error(ErrorCode::kBadState, m.info.describe() + " " + what + " twice at once");
  }
  if (waiters.empty()) barrier_started[id] = Clock::now();
  waiters.push_back(Waiter{b.rank(), reply, std::vector<uint8_t>(b.data()->begin(), b.data()->end())});
  complete_ready_barriers();
}

void Scheduler::State::leave_barriers(const Member& m) {
  for (auto& [id, waiters] : barriers) {
    waiters.erase(std::remove_if(waiters.begin(), waiters.end(), [&](const Waiter& w) { return w.rank == m.info.rank; }),
                  waiters.end());
  }
  complete_ready_barriers();
}

bool Scheduler::State::waits_to_be_let_in(int rank) const {
  const auto it = members.find({static_cast<int>(Role::kWorker), rank});
  return it != members.end() && it->second.awaiting_admission;
}

void Scheduler::State::on_admission(const wire::Barrier& b, Member& m, RequestServer::Reply& reply) {
  if (!lost.empty()) throw Error(ErrorCode::kPeerLost, lost.front().message());
  if (b.data() == nullptr) throw Error(ErrorCode::kProtocol, "admission from " + m.info.describe() + " without data");
  if (stopping) {
    throw Error(ErrorCode::kClosed, "admission of " + m.info.describe() + ": every worker in the job has finished");
  }
  // The workers in the job must all let the joined ones into the same group;
  // the joined ones learn its generation from the answer.
  if (!m.awaiting_admission && b.regroup_generation() != generation()) {
    throw Error(ErrorCode::kBadState, "admission by " + m.info.describe() + " at generation " +
                                          std::to_string(b.regroup_generation()) + ", but the job is at " +
                                          std::to_string(generation()) + " (regroup first)");
  }
  gather_for(kRegroupBit | kAdmissionBit | generation(), b, m, reply, "entered an admission");
}

void Scheduler::State::complete_ready_barriers() {
  for (auto it = barriers.begin(); it != barriers.end();) {
    // An admission lets in the waiting workers that are there once every
    // worker in the job is; the others wait for the next.
    size_t arrived = it->second.size();
    if (is_admission(it->first)) {
      arrived = static_cast<size_t>(std::count_if(it->second.begin(), it->second.end(),
                                                  [this](const Waiter& w) { return !waits_to_be_let_in(w.rank); }));
    }
    const size_t expected = workers_at_barrier(it->first);
    if (arrived < expected || expected == 0) {
      ++it;
      continue;
    }
    complete_barrier(it->first, it->second);
    barrier_started.erase(it->first);
    it = barriers.erase(it);
  }
}

void Scheduler::State::complete_barrier(uint64_t id, std::vector<Waiter>& waiters) {
  const size_t with_data = static_cast<size_t>(
      std::count_if(waiters.begin(), waiters.end(), [](const Waiter& w) { return w.data.has_value(); }));
  if (with_data == 0) {
    for (Waiter& w : waiters) w.reply(make_ack());
    return;
  }
  if (with_data != waiters.size()) {
    const std::string text = barrier_name(id) + ": " + std::to_string(with_data) + " of " +
                             std::to_string(waiters.size()) +
                             " workers sent data (an all-gather met a plain barrier: the workers' calls are out of step)";
    for (Waiter& w : waiters) w.reply(make_error_reply(ErrorCode::kBadState, text));
    return;
  }
  std::sort(waiters.begin(), waiters.end(), [](const Waiter& a, const Waiter& b) { return a.rank < b.rank; });
  uint64_t next_barrier = 0;
  if (is_admission(id)) {
    // The joined workers among them are in the job from now on: they take
    // the next barrier the others enter.
    for (const auto& [key, other] : members) {
      if (other.info.role == Role::kWorker && !other.lost && !other.awaiting_admission) {
        next_barrier = std::max(next_barrier, other.next_barrier);
      }
    }
    for (const Waiter& w : waiters) {
      Member& joined = members.at({static_cast<int>(Role::kWorker), w.rank});
      if (!joined.awaiting_admission) continue;
      joined.awaiting_admission = false;
      joined.next_barrier = joined.first_barrier = next_barrier;
      ++admitted;
      std::fprintf(stderr, "disttrain scheduler: %s was let into the running job; the job goes on with %d of %d workers\n",
                   joined.info.describe().c_str(), live_workers(), job.num_workers);
    }
  }
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<flatbuffers::Offset<wire::GatheredData>> gathered;
  for (const Waiter& w : waiters) gathered.push_back(wire::CreateGatheredData(fbb, w.rank, fbb.CreateVector(*w.data)));
  // One FlatBuffer, framed once per worker: each reply owns its message.
  Message first = make_message(fbb, wire::CreateAck(fbb, fbb.CreateVector(gathered), generation(), departed_workers(), next_barrier));
  for (size_t i = 0; i < waiters.size(); ++i) {
    waiters[i].reply(i == 0 ? std::move(first) : encode_frame(fbb.GetBufferPointer(), fbb.GetSize(), 0, nullptr));
  }
}

void Scheduler::State::on_shutdown(const wire::Shutdown& s, uint32_t pipe, RequestServer::Reply& reply) {
  const Role role = from_wire(s.role());
  // Servers never say goodbye: the scheduler tells them to stop.
  if (role != Role::kWorker) {
    throw Error(ErrorCode::kBadState, std::string("shutdown from a ") + role_name(role) +
                                          " (rule: only workers send Shutdown; servers are told to stop)");
  }
  Member& m = speaker(role, s.rank(), pipe, "shutdown");
  if (m.left) throw Error(ErrorCode::kBadState, "shutdown from " + m.info.describe() + " twice");
  m.left = true;
  reply(make_ack());
  stop_if_every_worker_left();
}

void Scheduler::State::stop_if_every_worker_left() {
  // A departed worker (DT_WORKER_LOSS=continue) never says goodbye.
  const bool all_left = std::all_of(members.begin(), members.end(), [](const auto& kv) {
    return kv.second.info.role != Role::kWorker || kv.second.left || kv.second.lost || kv.second.awaiting_admission;
  });
  if (all_left && !stopping) {
    stopping = true;
    stop_time = Clock::now();
    // Workers still waiting to be let in came too late: nobody is left to
    // hand them the weights.
    for (auto& [key, m] : members) {
      if (!m.awaiting_admission || m.lost || m.left) continue;
      m.left = true;
      std::fprintf(stderr, "disttrain scheduler: %s joined too late: every worker in the job finished before letting "
                   "it in\n", m.info.describe().c_str());
    }
    for (auto it = barriers.begin(); it != barriers.end();) {
      if (!is_admission(it->first)) {
        ++it;
        continue;
      }
      for (Waiter& w : it->second) {
        w.reply(make_error_reply(ErrorCode::kClosed, "admission of worker " + std::to_string(w.rank) +
                                                         ": every worker in the job finished before letting it in"));
      }
      barrier_started.erase(it->first);
      it = barriers.erase(it);
    }
  }
}

void Scheduler::State::mark_lost(Member& m, const std::string& reason) {
  if (m.awaiting_admission) {
    // It was never let in: the workers in the job never counted it, and its
    // place is free again for the next worker that joins.
    m.lost = true;
    m.awaiting_admission = false;
    std::fprintf(stderr, "disttrain scheduler: %s, which waited to be let into the job, was lost (%s)\n",
                 m.info.describe().c_str(), reason.c_str());
    leave_barriers(m);
    return;
  }
  if (m.info.role == Role::kServer && !m.announced) {
    // It never served: nobody routed anything to it, and its place is free
    // for the next server that registers to rejoin.
    m.lost = true;
    m.announced = true;
    m.dropped_while_rejoining = true;
    std::fprintf(stderr, "disttrain scheduler: %s, which was rejoining the job, was lost before it served (%s)\n",
                 m.info.describe().c_str(), reason.c_str());
    return;
  }
  // The last worker lost ends the job whatever the policy; so does a server,
  // unless the servers are replicated and every part it holds has its other
  // copy on a server still there.
  // A job without servers goes on too: its workers regroup their all-reduce
  // over the ones that remain.
  if (options.worker_loss == WorkerLossPolicy::kContinue && m.info.role == Role::kWorker && live_workers() > 1) {
    depart(m, reason);
    return;
  }
  if (options.server_replicas > 0 && m.info.role == Role::kServer && copies_survive(m.info.rank)) {
    depart(m, reason);
    return;
  }
  m.lost = true;
  LostNode l{m.info.role, m.info.rank, m.info.host, m.info.pid, reason};
  std::fprintf(stderr, "disttrain scheduler: %s\n", l.message().c_str());
  if (lost.empty()) first_loss = Clock::now();
  lost.push_back(l);
  for (auto& [id, waiters] : barriers) {
    for (Waiter& w : waiters) w.reply(make_error_reply(ErrorCode::kPeerLost, l.message()));
  }
  barriers.clear();
  barrier_started.clear();
  for (auto& [key, other] : members) other.told = false;
}

void Scheduler::State::depart(Member& m, const std::string& reason) {
  m.lost = true;
  LostNode l{m.info.role, m.info.rank, m.info.host, m.info.pid, reason};
  departed.push_back(l);
  if (m.info.role == Role::kServer) {
    // Workers switch its parts to their other holders when their
    // heartbeats bring the news, and give every part it held a new copy
    // on the next server left, as they push it.
    const int left = live_servers();
    std::fprintf(stderr,
                 "disttrain scheduler: %s; the job goes on with %d of %d servers (DT_SERVER_REPLICATION=1): its key "
                 "parts are served by their other holders%s\n",
                 l.message().c_str(), left, job.num_servers,
                 left >= 2 ? ", and every part it held gets a new copy on the next server left as the workers push it"
                           : "; one server is left, so the parts now have one copy (losing it would end the job)");
    seat_server_joins();
    return;
  }
  const int live = live_workers();
  std::fprintf(stderr,
               "disttrain scheduler: %s; the job goes on with %d of %d workers (DT_WORKER_LOSS=continue): the "
               "data shard of worker %d is no longer trained on\n",
               l.message().c_str(), live, job.num_workers, m.info.rank);
  // A regroup in progress gathers over workers that no longer are the job's:
  // its workers regroup again, at the new count.
  for (auto it = barriers.begin(); it != barriers.end();) {
    if (!is_regroup(it->first)) {
      ++it;
      continue;
    }
    const std::string text = l.message() + " during the regroup; regroup again without it";
    for (Waiter& w : it->second) w.reply(make_error_reply(ErrorCode::kBadState, text));
    barrier_started.erase(it->first);
    it = barriers.erase(it);
  }
  leave_barriers(m);
  stop_if_every_worker_left();
}

void Scheduler::State::fail_registrations(const Error& error) {
  for (Registration& g : registrations) g.reply(make_error_reply(error.code(), error.what()));
  registrations.clear();
  if (!failure) failure = error;
}

void Scheduler::State::on_pipe_closed(uint32_t pipe) {
  verbose_log(1, "scheduler: connection " + std::to_string(pipe) + " closed");
  std::lock_guard<std::mutex> lock(mutex);
  if (!published) {
    // A registered node died before the job started: nobody can wait for it.
    for (const Registration& g : registrations) {
      if (g.pipe == pipe) {
        const LostNode l{g.info.role, -1, g.info.host, g.info.pid, "connection closed during start-up"};
        fail_registrations(Error(ErrorCode::kPeerLost, l.message()));
        break;
      }
    }
  } else {
    for (auto& [key, m] : members) {
      if (m.pipe != pipe) continue;
      // A member told of the job's loss closes as it exits: that is the end
      // the scheduler waits for, not another loss.
      if (m.left || (m.told && !lost.empty())) {
        m.disconnected = true;
      } else if (!m.lost) {
        mark_lost(m, "connection closed");
      }
    }
  }
  cv.notify_all();
}

Scheduler::Scheduler(const JobConfig& job, const PsOptions& options) : state_(std::make_unique<State>()) {
  options.validate();
  State& st = *state_;
  st.job = job;
  st.options = options;
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
  // Stop the transport first: its handler threads use the state.
  state_->server.reset();
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
    if (!st.published) {
      if (seconds_since(st.started) > o.startup_timeout_s) {
        int servers = 0, workers = 0;
        for (const auto& g : st.registrations) (g.info.role == Role::kServer ? servers : workers)++;
        st.fail_registrations(Error(ErrorCode::kTimedOut,
                                    "only " + std::to_string(servers) + " of " + std::to_string(st.job.num_servers) +
                                        " servers and " + std::to_string(workers) + " of " +
                                        std::to_string(st.job.num_workers) + " workers registered within " +
                                        seconds_text(o.startup_timeout_s)));
        throw *st.failure;
      }
      continue;
    }
    for (auto it = st.server_joins.begin(); it != st.server_joins.end();) {
      // No place freed in time, or the job is ending: the server is told.
      const bool ending = !st.lost.empty() || st.stopping;
      if (!ending && seconds_since(it->since) <= o.startup_timeout_s) {
        ++it;
        continue;
      }
      const std::string text = ending ? "a server registered to rejoin a job that is ending"
                                      : "a server registered to rejoin the running job, and no server was lost "
                                        "whose place it could take within " + seconds_text(o.startup_timeout_s);
      it->reply(make_error_reply(ending ? ErrorCode::kBadState : ErrorCode::kTimedOut, text));
      it = st.server_joins.erase(it);
    }
    for (auto& [key, m] : st.members) {
      if (m.left || m.lost) continue;
      const double silent = std::chrono::duration<double>(now - m.last_heartbeat).count();
      if (silent > o.heartbeat_timeout_s) st.mark_lost(m, "no heartbeat for " + seconds_text(silent));
    }
    for (auto it = st.barrier_started.begin(); it != st.barrier_started.end();) {
      if (seconds_since(it->second) <= o.request_timeout_s) {
        ++it;
        continue;
      }
      auto& waiters = st.barriers[it->first];
      const std::string text = barrier_name(it->first) + ": only " + std::to_string(waiters.size()) + " of " +
                               std::to_string(st.live_workers()) + " workers arrived within " +
                               seconds_text(o.request_timeout_s);
      for (auto& w : waiters) w.reply(make_error_reply(ErrorCode::kTimedOut, text));
      st.barriers.erase(it->first);
      it = st.barrier_started.erase(it);
    }
    if (!st.lost.empty()) {
      // Told is not enough here either: a reply still queued when this
      // process exits is dropped, and its node would then name the
      // scheduler instead of the node the job lost. Each node closes its
      // connection once it has the news (it exits).
      // A worker waiting to be let in holds nothing of the job: it learns of
      // the end from this process's, and ends after it (a launcher then
      // sees the job fail first).
      const bool all_gone = std::all_of(st.members.begin(), st.members.end(), [](const auto& kv) {
        return kv.second.lost || kv.second.left || kv.second.awaiting_admission ||
               (kv.second.told && kv.second.disconnected);
      });
      if (all_gone || seconds_since(st.first_loss) > grace) throw Error(ErrorCode::kPeerLost, st.lost.front().message());
    } else if (st.stopping) {
      // Told is not enough: the transport drops replies still queued when
      // this process closes its socket, and a server that missed its stop
      // would then report the scheduler lost. So wait until each server has
      // closed its connection, which it does once the stop has arrived.
      const bool servers_gone = std::all_of(st.members.begin(), st.members.end(), [](const auto& kv) {
        return kv.second.info.role != Role::kServer || kv.second.lost ||
               (kv.second.told && kv.second.disconnected);
      });
      if (servers_gone || seconds_since(st.stop_time) > o.shutdown_timeout_s) return;
    }
  }
}

}  // namespace dt::ps
