// DT_SERVER_REPLICATION=1 at the scheduler: the companion that lets the job
// go on without a lost server while every part it held has its other copy on
// a server still there, seats a server registering to rejoin in a departed
// one's place, announces it at its first heartbeat, and tells when the
// workers' new copies are filled. The scheduler reaches it through the hooks
// below; the plain registration and heartbeat path knows none of this.
// Called with the scheduler's one mutex held.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ps/job/job_config.h"
#include "ps/key_placement.h"
#include "ps/roles/node_table.h"
#include "ps/scheduler/member_table.h"

namespace dt::ps {

class ServerRecovery {
 public:
  // departed: the scheduler's list of nodes the job went on without.
  ServerRecovery(const JobConfig& job, const PsOptions& options, MemberTable& members,
                 const std::vector<LostNode>& departed)
      : job_(job), options_(options), members_(members), departed_(departed) {}

  // A server registering after publication takes the place of a departed
  // one, at once or once one departs (ending: the job is ending).
  void join(const wire::Register& r, uint32_t pipe, const RequestServer::Reply& reply, bool ending);
  // Refuses the servers that waited for a place longer than timeout_s, or
  // all of them once the job is ending.
  void expire_joins(double timeout_s, bool ending);
  // A member's heartbeat: refused for a server dropped while rejoining; a
  // rejoined server is announced at its first; a worker reports its new
  // copies filled.
  void heard(Member& m, const wire::Heartbeat& h);

  // m, lost, was rejoining and never served: nobody routed anything to it,
  // and its place is free for the next server that registers to rejoin.
  // Returns false for any other member.
  bool lose_rejoining(Member& m, const std::string& reason);
  // Whether the job goes on without m (a server whose parts all have their
  // other copy on a server still in the job).
  bool may_depart(const Member& m) const;
  // A server departed (already lost, in the departed list as lost).
  void departed(const LostNode& lost);

  // Servers that rejoined, announced (HeartbeatReply.rejoined).
  const std::vector<RejoinedServer>& rejoined() const { return rejoined_; }

 private:
  // Gives waiting server registrations the places of departed servers.
  void seat();
  // After how many of the job's server changes every live worker has seen
  // its parts' new copies filled.
  uint32_t copies_restored(const std::vector<ServerChange>& changes) const;
  // Logs once every live worker has reported the new copies made after the
  // latest server loss filled (Heartbeat.copies_restored).
  void announce_copies_restored();

  const JobConfig& job_;
  const PsOptions& options_;
  MemberTable& members_;
  const std::vector<LostNode>& departed_;
  std::vector<RejoinedServer> rejoined_;
  // Servers registering to rejoin before the scheduler has declared the
  // loss of the one they replace (a launcher restarts a server the moment
  // it dies): they wait for a place, up to startup_timeout_s.
  std::vector<Registration> joins_;
  uint32_t copies_restored_announced_ = 0;
};

}  // namespace dt::ps
