// DT_WORKER_LOSS=continue at the scheduler: the companion that lets the job
// go on without a lost worker (a departure), takes a worker registering
// later into a departed one's place, regroups an all-reduce job's workers
// after a loss (the Regroup message) and lets joined workers into a job
// without servers (the Admission message). The scheduler reaches it through the hooks
// below; the plain registration and barrier path knows none of this. Called
// with the scheduler's one mutex held.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ps/job/job_config.h"
#include "ps/roles/node_table.h"
#include "ps/scheduler/barrier_book.h"
#include "ps/scheduler/member_table.h"

namespace dt::ps {

class WorkerRoster {
 public:
  // departed: the scheduler's list of nodes the job went on without.
  WorkerRoster(const JobConfig& job, const PsOptions& options, MemberTable& members, BarrierBook& barriers,
               const std::vector<LostNode>& departed)
      : job_(job), options_(options), members_(members), barriers_(barriers), departed_(departed) {}

  // A worker registering after publication takes the place of one the job
  // went on without, and joins the running job (ending: the job is ending).
  void join(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply, bool ending);
  // A regroup or an admission from m (stopping: every worker has finished).
  void enter(const GroupCall& call, Member& m, RequestServer::Reply& reply, bool stopping);
  // Whether regroup or admission id has every worker it waits for.
  bool ready(uint64_t id, const std::vector<Waiter>& waiters) const;
  // A completed admission lets in the joined workers at it; returns the
  // barrier they enter next (0 for anything but an admission).
  uint64_t let_in(uint64_t id, const std::vector<Waiter>& waiters);

  // m, lost, was waiting to be let in: it never counted in the job, and its
  // place is free again. Returns false for any other member.
  bool lose_unadmitted(Member& m, const std::string& reason);
  // Whether the job goes on without m (a worker, not the last one).
  bool may_depart(const Member& m) const;
  // m departed (already lost, in the departed list as lost).
  void departed(const Member& m, const LostNode& lost);
  // Every worker in the job finished: the ones waiting to be let in came
  // too late, and their admissions end.
  void turn_away_unadmitted();

  // Workers in an admission, waiting to be let in (HeartbeatReply).
  uint32_t awaiting_admission() const;
  // What a regroup is counted at: workers departed plus workers let in.
  uint64_t generation() const { return departed_workers() + admitted_; }
  uint64_t departed_workers() const;

 private:
  bool waits_to_be_let_in(int rank) const;
  // Adds a worker's data to the all-gather under id; `what` names the call
  // in the error for a worker there twice.
  void gather(uint64_t id, const GroupCall& call, Member& m, RequestServer::Reply& reply, const char* what);

  const JobConfig& job_;
  const PsOptions& options_;
  MemberTable& members_;
  BarrierBook& barriers_;
  const std::vector<LostNode>& departed_;
  uint64_t admitted_ = 0;  // workers let into a job without servers after joining it
};

}  // namespace dt::ps
