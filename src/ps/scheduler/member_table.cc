#include "ps/scheduler/member_table.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "core/log.h"
#include "core/timeline/clock_offset.h"
#include "core/timeline/timeline.h"
#include "ps/transport/frame.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

bool Member::lost() const {
  return state_ == MemberState::kLost || state_ == MemberState::kLostThenLeft || state_ == MemberState::kDropped;
}

bool Member::left() const {
  return state_ == MemberState::kLeft || state_ == MemberState::kLeftUnadmitted ||
         state_ == MemberState::kLostThenLeft;
}

bool Member::awaiting_admission() const {
  return state_ == MemberState::kAwaitingAdmission || state_ == MemberState::kLeftUnadmitted;
}

void Member::leave() {
  switch (state_) {
    case MemberState::kAwaitingAdmission:
      state_ = MemberState::kLeftUnadmitted;
      break;
    case MemberState::kLost:
      state_ = MemberState::kLostThenLeft;
      break;
    case MemberState::kActive:
    case MemberState::kRejoining:
      state_ = MemberState::kLeft;
      break;
    case MemberState::kLeft:
    case MemberState::kLeftUnadmitted:
    case MemberState::kLostThenLeft:
    case MemberState::kDropped:
      break;
  }
}

void Member::take_place(const NodeInfo& node, uint32_t connection, MemberState start,
                        SchedulerClock::time_point now) {
  info = node;
  pipe = connection;
  last_heartbeat = now;
  told = disconnected = false;
  state_ = start;
}

NodeInfo registered_node(const wire::Register& r) {
  NodeInfo info;
  info.role = from_wire(r.role());
  info.host = r.host() == nullptr ? std::string() : r.host()->str();
  info.pid = r.pid();
  if (r.data_urls() != nullptr) {
    for (const auto* u : *r.data_urls()) info.data_urls.push_back(u->str());
  }
  return info;
}

void MemberTable::check_layout(const wire::Register& r) const {
  if (r.num_servers() != job_.num_servers || r.num_workers() != job_.num_workers) {
    throw Error(ErrorCode::kInvalidArgument,
                "mismatched job layout: this node has DMLC_NUM_SERVER=" + std::to_string(r.num_servers()) +
                    " DMLC_NUM_WORKER=" + std::to_string(r.num_workers()) + ", the scheduler has " +
                    std::to_string(job_.num_servers) + " and " + std::to_string(job_.num_workers));
  }
}

bool MemberTable::add(const wire::Register& r, uint32_t pipe, const RequestServer::Reply& reply) {
  const Role role = from_wire(r.role());
  if (role == Role::kScheduler) throw Error(ErrorCode::kInvalidArgument, "a second scheduler tried to register");
  check_layout(r);
  const int limit = role == Role::kServer ? job_.num_servers : job_.num_workers;
  int count = 0;
  for (const Registration& g : registrations_) {
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
  if (role == Role::kWorker && r.requested_rank() >= job_.num_workers) {
    throw Error(ErrorCode::kInvalidArgument, "DMLC_WORKER_ID=" + std::to_string(r.requested_rank()) +
                                                 " is out of range for " + std::to_string(job_.num_workers) + " workers");
  }
  Registration g;
  g.info = registered_node(r);
  g.requested_rank = role == Role::kWorker ? r.requested_rank() : -1;
  g.pipe = pipe;
  g.reply = reply;
  g.registered_us = core::timeline::now_us();
  core::log(core::LogLevel::kDebug, "scheduler",
            std::string(role_name(role)) + " (pid " + std::to_string(g.info.pid) + " on host " + g.info.host +
                ") registered on connection " + std::to_string(pipe) + ", " +
                std::to_string(registrations_.size() + 1) + " of " +
                std::to_string(job_.num_servers + job_.num_workers) + " nodes");
  registrations_.push_back(std::move(g));
  return static_cast<int>(registrations_.size()) == job_.num_servers + job_.num_workers;
}

void MemberTable::publish() {
  NodeTable table;
  table.num_servers = job_.num_servers;
  table.num_workers = job_.num_workers;
  table.scheduler_pid = static_cast<int64_t>(::getpid());
  std::vector<Registration*> servers, workers;
  for (Registration& g : registrations_) (g.info.role == Role::kServer ? servers : workers).push_back(&g);
  const bool all_requested =
      std::all_of(workers.begin(), workers.end(), [](Registration* g) { return g->requested_rank >= 0; });
  if (all_requested) {
    std::sort(workers.begin(), workers.end(),
              [](Registration* a, Registration* b) { return a->requested_rank < b->requested_rank; });
  }
  for (size_t i = 0; i < servers.size(); ++i) servers[i]->info.rank = static_cast<int>(i);
  for (size_t i = 0; i < workers.size(); ++i) workers[i]->info.rank = static_cast<int>(i);
  for (Registration* g : servers) table.servers.push_back(g->info);
  for (Registration* g : workers) table.workers.push_back(g->info);
  core::log(core::LogLevel::kDebug, "scheduler", "node table published");
  for (const std::string& line : node_table_lines(table)) core::log(core::LogLevel::kDebug, "scheduler", "  " + line);
  // The job's start-up: from the first node's registration to the table.
  if (!registrations_.empty()) {
    core::timeline::record("scheduler", "registration", registrations_.front().registered_us,
                           core::timeline::now_us(), {"nodes", static_cast<int64_t>(registrations_.size())});
  }
  table.scheduler_boot_id = core::timeline::boot_id();
  const SchedulerClock::time_point now = SchedulerClock::now();
  for (Registration& g : registrations_) {
    members_.insert_or_assign({static_cast<int>(g.info.role), g.info.rank},
                              Member(g.info, g.pipe, MemberState::kActive, now));
    table.your_rank = g.info.rank;
    table.scheduler_clock_us = core::timeline::now_us();
    flatbuffers::FlatBufferBuilder fbb(1024);
    g.reply(make_message(fbb, write_node_table(fbb, table)));
  }
  registrations_.clear();
  published_ = true;
}

void MemberTable::fail_registrations(const Error& error) {
  for (Registration& g : registrations_) g.reply(make_error_reply(error.code(), error.what()));
  registrations_.clear();
}

const Registration* MemberTable::registration_on(uint32_t pipe) const {
  for (const Registration& g : registrations_) {
    if (g.pipe == pipe) return &g;
  }
  return nullptr;
}

std::string MemberTable::missing_text(double timeout_s) const {
  int servers = 0, workers = 0;
  for (const Registration& g : registrations_) (g.info.role == Role::kServer ? servers : workers)++;
  return "only " + std::to_string(servers) + " of " + std::to_string(job_.num_servers) + " servers and " +
         std::to_string(workers) + " of " + std::to_string(job_.num_workers) + " workers registered within " +
         seconds_text(timeout_s);
}

Member& MemberTable::speaker(Role role, int rank, uint32_t pipe, const char* what) {
  auto it = members_.find({static_cast<int>(role), rank});
  if (!published_ || it == members_.end()) {
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

NodeTable MemberTable::table_for(int rank, bool joined) const {
  NodeTable table;
  table.num_servers = job_.num_servers;
  table.num_workers = job_.num_workers;
  table.scheduler_pid = static_cast<int64_t>(::getpid());
  table.your_rank = rank;
  table.joined_running_job = joined;
  for (const auto& [key, m] : members_) (m.info.role == Role::kServer ? table.servers : table.workers).push_back(m.info);
  return table;
}

int MemberTable::count(Role role) const {
  return static_cast<int>(std::count_if(members_.begin(), members_.end(), [role](const auto& kv) {
    return kv.second.info.role == role && kv.second.counted();
  }));
}

size_t MemberTable::workers_at_barrier(uint64_t id) const {
  return static_cast<size_t>(std::count_if(members_.begin(), members_.end(), [id](const auto& kv) {
    const Member& m = kv.second;
    return m.info.role == Role::kWorker && m.counted() && m.first_barrier <= id;
  }));
}

uint64_t MemberTable::next_barrier(bool counted_only) const {
  uint64_t next = 0;
  for (const auto& [key, m] : members_) {
    if (m.info.role != Role::kWorker || m.lost() || (counted_only && !m.counted())) continue;
    next = std::max(next, m.next_barrier);
  }
  return next;
}

}  // namespace dt::ps
