// An NCCL communicator over the worker processes of a disttrain job, one GPU
// per worker, set up without MPI as SINGA's DistOpt does: worker 0 creates
// the unique id and the job's scheduler hands it to every worker (an
// all-gather barrier, ps::ClusterMember::allgather), then each joins with
// ncclCommInitRank as rank = its worker rank.
#pragma once

#include <memory>

#include "collective/nccl/communicator.h"
#include "ps/roles/cluster_member.h"

namespace dt::collective::nccl {

// Every worker of member's job must call it at the same point of its barrier
// sequence. Waits for the scheduler within the job's request timeout and for
// the other ranks within timeout_s (Error(kTimedOut)); Error(kPeerLost) when a
// worker was lost; Error(kProtocol) when the id that arrived is malformed.
std::unique_ptr<Communicator> join_job_communicator(ps::ClusterMember& member, int device, double timeout_s);

}  // namespace dt::collective::nccl
