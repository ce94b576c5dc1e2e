// An NCCL communicator over the worker processes of a disttrain job, one GPU
// per worker, set up without MPI as SINGA's DistOpt does: worker 0 creates
// the unique id and `exchange` hands it to every worker (in a job the
// scheduler's all-gather barrier, ps::ClusterMember::allgather, injected by
// the kvstore), then each joins with ncclCommInitRank as rank = its worker
// rank.
#pragma once

#include <memory>

#include "collective/nccl/communicator.h"
#include "collective/exchange.h"

namespace dt::collective::nccl {

// Every one of the num_ranks workers must call it at the same point of its
// exchange sequence. The exchange's own failures pass through (a job's:
// Error(kTimedOut) past the request timeout, Error(kPeerLost) when a worker
// was lost); the other ranks are waited for within timeout_s
// (Error(kTimedOut)); Error(kProtocol) when the id that arrived is malformed.
std::unique_ptr<Communicator> join_job_communicator(int rank, int num_ranks, const Exchange& exchange, int device,
                                                    double timeout_s);

}  // namespace dt::collective::nccl
