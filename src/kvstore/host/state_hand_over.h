// The hand-over step of an all-reduce job (DT_WORKER_LOSS=continue): after
// the workers in the job let joined ones in (admission_vote.h), the first
// worker that holds the job's state (the trainer's weights and progress)
// sends it to every worker of the group. A companion of the survivor group
// (survivor_group.h), which runs it as one of its steps: a step whose
// result every worker holds once it finished (the closing all-reduce comes
// after the broadcasts), so a loss in it runs it again over the workers
// left, from the first of them that holds the state then (one that was in
// the job before, or a joined one that had received all of it).
//
// Threading: the step runs on the thread that runs the group's steps.
#pragma once

#include <cstdint>
#include <vector>

#include "collective/host/host_communicator.h"

namespace dt::kvstore {

// One run of the step over comm, whose ranks are members (job ranks,
// ascending); joined names the workers let in, for errors. holds: whether
// this worker holds the state (in `state`); both are set once it received
// it. Error(kPeerLost) when no worker of the group holds it.
void hand_over_state_step(collective::host::HostCommunicator& comm, const std::vector<int>& members,
                          const std::vector<int>& joined, bool& holds, std::vector<uint8_t>& state);

}  // namespace dt::kvstore
