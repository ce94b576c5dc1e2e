// The scheduler's members: the registrations that wait for the node table,
// then one entry per node. Each member is in one MemberState, and the
// transitions of Member are the only writers of it; the fault-tolerance
// companions (worker_roster.h, server_recovery.h) move members through the
// same transitions. Plain data: the scheduler's one mutex guards it, and every
// call is made with that mutex held.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ps/job/job_config.h"
#include "ps/roles/node_table.h"
#include "ps/transport/protocol_generated.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

using SchedulerClock = std::chrono::steady_clock;

// A member's phase in the job.
enum class MemberState {
  kActive,  // in the job: it serves, or it works and enters barriers
  // A server seated in a departed one's place (DT_SERVER_REPLICATION=1): it
  // is announced to the others at its first heartbeat, which it sends only
  // once it has the job's settings and can serve.
  kRejoining,
  // A worker that joined a job without servers in a departed one's place
  // (DT_WORKER_LOSS=continue): it has no weights yet, and waits for the
  // workers in the job to let it in at their next step. No barrier or
  // regroup waits for it, and losing it frees the place again.
  kAwaitingAdmission,
  kLeft,  // sent Shutdown (worker) or was told to stop (server)
  // Waited to be let in when every worker in the job had finished.
  kLeftUnadmitted,
  kLost,  // lost, or departed: the job goes on without it
  // Lost, and said goodbye (or was told to stop) after: its place is not
  // free for a worker joining.
  kLostThenLeft,
  // A rejoining server lost before it served (it took too long to get the
  // settings, say): its later heartbeats are told so, and it ends.
  kDropped,
};

class Member {
 public:
  Member(NodeInfo node, uint32_t connection, MemberState start, SchedulerClock::time_point now)
      : info(std::move(node)), pipe(connection), last_heartbeat(now), state_(start) {}

  NodeInfo info;
  // The connection it registered on: its identity. Messages in its name on
  // any other connection are refused; only a node taking the place moves it.
  uint32_t pipe = 0;
  uint64_t next_barrier = 0;   // workers: the only barrier id it may enter next
  uint64_t first_barrier = 0;  // workers: barriers before this one do not wait for it (it joined later)
  SchedulerClock::time_point last_heartbeat;
  // How far the news of the job's end got to it, beside its state (a lost
  // member may still be told): a heartbeat reply listed the loss or the
  // stop, and its connection closed after it left or was told (a stopped
  // server closes only once the reply telling it to stop has arrived).
  bool told = false;
  bool disconnected = false;
  // Workers of a replicated job: after how many server changes every part
  // it initialised had its new copy filled (Heartbeat.copies_restored).
  uint32_t copies_restored = 0;

  MemberState state() const { return state_; }
  bool lost() const;                // kLost, kLostThenLeft, kDropped
  bool left() const;                // kLeft, kLeftUnadmitted, kLostThenLeft
  bool awaiting_admission() const;  // kAwaitingAdmission, kLeftUnadmitted
  bool announced() const { return state_ != MemberState::kRejoining; }
  // Counts among the job's nodes: neither lost nor still on its way in.
  bool counted() const { return state_ == MemberState::kActive || state_ == MemberState::kLeft; }

  // Transitions. leave: Shutdown, the stop, or the job finishing before it
  // was let in; lose: lost or departed; drop: lost while rejoining; admit:
  // let in; announce: a rejoined server's first heartbeat.
  void leave();
  void lose() { state_ = MemberState::kLost; }
  void drop() { state_ = MemberState::kDropped; }
  void admit() { state_ = state_ == MemberState::kLeftUnadmitted ? MemberState::kLeft : MemberState::kActive; }
  void announce() { state_ = MemberState::kActive; }
  // A node registering anew takes this lost member's place, on its own
  // connection, starting in `start`.
  void take_place(const NodeInfo& node, uint32_t connection, MemberState start, SchedulerClock::time_point now);

 private:
  MemberState state_;
};

// A node waiting for the node table (or, rejoining, for a place).
struct Registration {
  NodeInfo info;
  int requested_rank = -1;
  uint32_t pipe = 0;
  RequestServer::Reply reply;
  SchedulerClock::time_point since;  // server joins: when it registered
  int64_t registered_us = 0;  // the timeline's clock as it arrived
};

// The node a Register message describes (no rank yet).
NodeInfo registered_node(const wire::Register& r);

class MemberTable {
 public:
  using Members = std::map<std::pair<int, int>, Member>;  // (role, rank)

  explicit MemberTable(const JobConfig& job) : job_(job) {}

  // Error(kInvalidArgument) when the node read another job layout.
  void check_layout(const wire::Register& r) const;
  // Before publication: holds a node's registration (its reply waits for
  // the node table). Error naming the rule for a second scheduler, a
  // mismatched layout, a taken or out-of-range DMLC_WORKER_ID, or more nodes
  // of a role than the job has. Returns whether every node is there.
  bool add(const wire::Register& r, uint32_t pipe, const RequestServer::Reply& reply);
  // Assigns ranks (workers by DMLC_WORKER_ID when each asked for one),
  // answers every registration with the node table, and makes the nodes
  // members.
  void publish();
  bool published() const { return published_; }
  // Before publication: answers every registration with error.
  void fail_registrations(const core::Error& error);
  // The registration held for the node on pipe; null when none.
  const Registration* registration_on(uint32_t pipe) const;
  // "only 1 of 2 servers and 0 of 2 workers registered within 5.0 s"
  std::string missing_text(double timeout_s) const;

  Members& all() { return members_; }
  const Members& all() const { return members_; }
  // The member the message speaks for, if it arrived on that member's own
  // connection; Error naming the rule otherwise.
  Member& speaker(Role role, int rank, uint32_t pipe, const char* what);
  // The node table as a member joining later (or rejoining) receives it.
  NodeTable table_for(int rank, bool joined) const;
  // Workers, servers that count in the job (Member::counted).
  int live_workers() const { return count(Role::kWorker); }
  int live_servers() const { return count(Role::kServer); }
  // How many workers numbered barrier id waits for.
  size_t workers_at_barrier(uint64_t id) const;
  // The next barrier of the workers not lost, including (or not) the ones
  // on their way in: where a worker joining now starts.
  uint64_t next_barrier(bool counted_only) const;

 private:
  int count(Role role) const;

  const JobConfig& job_;
  std::vector<Registration> registrations_;
  bool published_ = false;
  Members members_;
};

}  // namespace dt::ps
