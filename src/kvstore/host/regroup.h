// The regroup of an all-reduce job's group after the job lost workers
// (DT_WORKER_LOSS=continue): a recovery primitive of the survivor group
// (survivor_group.h), which decides when to use it.
//
// Each survivor closes its links, meets the others through the scheduler
// (ClusterMember::regroup, an all-gather of the workers still in the job,
// which carries each one's count of finished steps and mesh address) and
// connects afresh, ranked in the order of the worker ranks. Then the step
// the loss interrupted is settled alike everywhere: when some survivors
// finished it, the first of them sends the others its result; when none
// did, the caller runs it again over the survivors (survivor_group.h says
// why the counts differ by one at most).
//
// Threading: only the thread that runs the group's steps calls it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collective/host/host_communicator.h"
#include "kvstore/host/group_membership.h"
#include "ps/job/job_config.h"
#include "ps/roles/cluster_member.h"

namespace dt::kvstore {

class Regroup {
 public:
  // member, group and steps must outlive it.
  Regroup(ps::ClusterMember& member, const ps::PsOptions& options,
          collective::host::HostCommunicatorOptions comm_options, GroupMembership& group, StepRecord& steps);

  // Workers departed (one entry per departure: a rank may depart, be
  // replaced and depart again), in the scheduler's order, as this worker
  // heard.
  std::vector<ps::LostNode> worker_departures() const;
  // True when the job lost a worker since the group formed, and the group
  // is open and connected (a joined worker not let in yet has none).
  bool pending() const;
  // Waits (bounded) until the job has lost more workers than `beyond`
  // departures; false when no such news came.
  bool wait_for_departure(uint64_t beyond) const;
  // Meets the survivors and connects to them, again while workers are lost
  // meanwhile (up to request_timeout_s); in_step: data/bytes is the step in
  // progress (the one this worker has not finished). Returns true when that
  // step got its result from a survivor that finished it.
  bool over_survivors(void* data, size_t bytes, bool in_step);

 private:
  // What each survivor said: steps finished, and the size of its copy of
  // the last one's result.
  struct Progress {
    uint64_t steps_done = 0;
    uint64_t result_bytes = 0;
  };
  // One try at the generation the worker knows; kBadState when the
  // scheduler counts another.
  bool try_once(void* data, size_t bytes, bool in_step);
  // Ends the interrupted step alike on every survivor; returns whether this
  // worker took its result from one ahead, and says what happened in text.
  bool settle(collective::host::HostCommunicator& fresh, const std::vector<int>& survivors,
              const std::vector<Progress>& progress, void* data, size_t bytes, bool in_step, std::string& settled);

  ps::ClusterMember& member_;
  const ps::PsOptions options_;
  const collective::host::HostCommunicatorOptions comm_options_;
  GroupMembership& group_;
  StepRecord& steps_;
};

}  // namespace dt::kvstore
