// Where this worker process sits among the workers of its host: the GPU a
// program that trains on one GPU per worker uses (the examples' --gpus
// local; dist_nccl's default GPU). Read from the launcher's environment, the
// first source that is set:
//   DT_LOCAL_RANK / DT_LOCAL_SIZE            dtrun (every launcher of its own)
//   LOCAL_RANK / LOCAL_WORLD_SIZE            torchrun, and dtrun too
//   OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE Open MPI's mpirun
//   MPI_LOCALRANKID / MPI_LOCALNRANKS        MPICH's hydra
//   SLURM_LOCALID / (none)                   srun
// Under mpirun and srun (dtrun --launcher mpi|slurm) the launcher counts
// every process it started on the host, servers included, so a worker's
// local rank there can be above its GPU count: give those jobs one worker
// per GPU and the servers their own hosts, or set DT_LOCAL_RANK per rank.
// Nothing set: local rank 0 of 1, a process started by hand.
#pragma once

#include "ps/job/job_config.h"

namespace dt::ps {

struct LocalRank {
  int rank = 0;  // 0 .. size - 1
  int size = 1;  // worker processes on this host; 0 when the launcher does not say
  bool from_launcher = false;  // false: nothing set, the defaults above
};

// Error(kInvalidArgument) naming the variable for a value that is not a
// whole number >= 0 (a size >= 1), or a rank not below its size.
LocalRank local_rank_from(const EnvLookup& env);
LocalRank local_rank_from_env();

}  // namespace dt::ps
