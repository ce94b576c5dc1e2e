// The workers of an all-reduce job ("allreduce" kvstore) that are still in
// it, and the host communicator over them.
//
// Without DT_WORKER_LOSS=continue the group is the job's workers for good: a
// lost worker fails the collective in progress and every later one.
//
// Under continue, the scheduler lets the job go on without a lost worker
// (it "departs"), and the survivors regroup: each closes its links, the
// survivors meet through the scheduler (ClusterMember::regroup, an
// all-gather of the workers still in the job) and connect afresh, ranked in
// the order of their worker ranks. Rebuilding the ring is the easy half; the
// other half is the collective the loss interrupted, which some survivors
// may have finished (with the lost worker's data in it) and others not. The
// group works in steps to settle it:
//  - A step is a run of collectives that ends with an all-reduce (a bucket
//    of gradients is one all-reduce). A worker finishes an all-reduce only
//    once every worker has entered it, so when any survivor finished step k,
//    every survivor has finished step k - 1 at least: their counts of
//    finished steps differ by one at most.
//  - In the regroup each survivor says how many steps it finished. When some
//    are one behind, the first survivor that is ahead sends them its result
//    of that step (it keeps a copy of its last step's result): the step ends
//    alike everywhere, the lost worker's data counted, as in a dist_sync
//    round it pushed to before it was lost.
//  - When none finished the step, every survivor runs it again over the
//    survivors, from its input (kept too): the lost worker's data is not
//    counted.
// Either way every survivor ends every step with the same bytes, and no
// step counts the lost worker's data on one survivor and not on another.
//
// Under continue, a worker started again in a departed one's place joins
// the job (NodeTable.joined_running_job): once its program is ready to
// train, its first hand_over() waits in the scheduler's admission. The
// workers in the job vote at the calls vote_due() picks, about every
// 0.1 s of steps (one small all-reduce: whether any of them heard, from the
// scheduler's heartbeats, of a worker waiting there, and how long their
// steps took, which sets the calls until the next vote alike everywhere),
// so they all agree on the step;
// then they meet it in the admission (ClusterMember::admission) and all
// connect afresh over the grown group, ranked by worker rank. The
// hand-over step then sends the joined ones what they need to take part
// (the trainer's weights and progress) from the first worker that holds
// it. Both are steps like any other: a loss during them regroups and
// settles as above.
//
// The group is the plain path (run a step, retry it after a regroup); each
// feature is a companion it calls at one point: regroup.h (the recovery
// primitive), admission_vote.h (when and whom to let in),
// state_hand_over.h (the hand-over step). Threading: one thread runs steps
// and regroups; the heartbeat thread calls on_departure() and abort().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collective/host/host_communicator.h"
#include "core/error.h"
#include "core/traffic.h"
#include "kvstore/host/admission_vote.h"
#include "kvstore/host/group_membership.h"
#include "kvstore/host/regroup.h"
#include "ps/job/job_config.h"
#include "ps/roles/cluster_member.h"

namespace dt::kvstore {

class SurvivorGroup {
 public:
  using Step = std::function<void(collective::host::HostCommunicator&)>;

  // Connects to every worker of the job (through member's allgather: every
  // worker makes this call at the same point of its barrier sequence).
  // Regroups after losses when options.worker_loss is continue. member must
  // outlive the group.
  // A worker that joined the running job (member.table().joined_running_job)
  // connects to nobody yet: its first hand_over() does, once let in.
  SurvivorGroup(ps::ClusterMember& member, const ps::PsOptions& options,
                collective::host::HostCommunicatorOptions comm_options);
  SurvivorGroup(const SurvivorGroup&) = delete;
  SurvivorGroup& operator=(const SurvivorGroup&) = delete;

  bool regroups() const { return regroups_; }
  // The workers in the group now, by their ranks in the job.
  std::vector<int> workers() const;

  // Runs one step: `step` runs collectives on the communicator, the last of
  // them an all-reduce, in place on data (bytes; none for a step whose
  // result every worker holds once it finished, such as broadcasts followed
  // by an all-reduce). Every worker runs the same steps in the same order.
  // A failure is thrown as it is, unless the group regroups and the job
  // loses a worker within the heartbeat timeout: then the step ends as the
  // header says. redoable = false (a step with side effects of its own, such
  // as compression's error feedback) fails instead of running again.
  // One thread at a time runs steps and regroups. Between letting workers
  // in and the hand-over, any other step is Error(kBadState): the joined
  // ones wait in the hand-over, and a step of another kind would pair with
  // theirs.
  void run_step(const Step& step, void* data, size_t bytes, bool redoable = true);
  // Ends a step that is not an all-reduce of its own (broadcasts, an
  // all-gather) when the group regroups: a worker finishes it only once
  // every worker has finished the collectives before it, which a regroup
  // relies on (see above). Nothing otherwise.
  void confirm_step(collective::host::HostCommunicator& comm) const;

  // True when the job lost a worker this group still includes: the
  // communication thread, idle, then calls regroup().
  bool regroup_pending() const;
  // Regroups between steps. A failure is kept and thrown by the next step.
  void regroup();

  // The heartbeat thread, when worker `rank` departed: fails the step in
  // progress at once, so that its thread regroups. News of a worker the
  // group no longer includes (it regrouped already) is ignored.
  void on_departure(int rank, const std::string& why);
  // Any thread: fails the step in progress and every later one (the job
  // lost a node, or the store is closing).
  void abort(const std::string& why);
  // Bytes sent to and received from the other workers, all groups together.
  core::Traffic traffic() const;

  // Whether this call of the workers' admission points (about every 0.1 s
  // of steps, see above) is one where they vote: counts it. The same on
  // every worker when they all call it at the same points. False without
  // DT_WORKER_LOSS=continue.
  bool vote_due();
  // Where vote_due() said so, on every worker in the job (a step of its
  // own): votes, and returns true, alike on every one, when workers that
  // joined were let in just now; then every worker calls hand_over() next.
  bool admit_waiting_workers();
  // The step after the joined workers were let in: on a joined worker,
  // returns the state the first worker in the group that holds it sent (a
  // joined worker's own is ignored); on the workers that held it, nothing
  // (they have it). A joined worker's first call waits until
  // the workers in the job let it in: Error(kTimedOut) after
  // startup_timeout_s + request_timeout_s, kClosed when the job finished
  // first. Before it, any other step is Error(kBadState).
  std::vector<uint8_t> hand_over(std::vector<uint8_t> state);
  // Whether a hand-over is the next step: workers were let in, or this one
  // joined and waits to be.
  bool hand_over_due() const;
  // Whether this worker joined the running job and has not had the job's
  // state yet.
  bool awaits_hand_over() const;

 private:
  // The admission's answer taken in: the group's new members and
  // generation; the joined ones take the others' count of steps.
  void take_admission(const ps::ClusterMember::Gathered& admitted);

  ps::ClusterMember& member_;
  const ps::PsOptions options_;
  const bool regroups_;

  GroupMembership group_;
  // The thread running steps only.
  StepRecord steps_;
  std::vector<uint8_t> input_;         // the step in progress's input
  std::optional<core::Error> broken_;  // an idle regroup's failure
  Regroup regroup_;
  AdmissionVote vote_;
};

}  // namespace dt::kvstore
