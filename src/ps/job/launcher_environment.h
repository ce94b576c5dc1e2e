// Which launcher started this process, and what its variables say about the
// job: role, worker id, server/worker counts, the scheduler's address.
//
// Sources, best first; the role (and rank) come from the first source that
// names one, every other value from the first source that has it:
//   1. explicit options (JobOverrides)
//   2. DMLC_* (when DMLC_ROLE is set): DMLC_ROLE, DMLC_WORKER_ID,
//      DMLC_NUM_SERVER, DMLC_NUM_WORKER, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT
//   3. MX_CONFIG, the Kubeflow MXJob operator's JSON:
//      {"cluster": {"scheduler": [{"url": H, "port": P}], "server": [...],
//       "worker": [...]}, "labels": {...}, "task": {"type": T, "index": I}}
//   4. RANK / WORLD_SIZE (torchrun-style), with MASTER_ADDR / MASTER_PORT
//   5. OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (Open MPI's mpirun)
//   6. PMI_RANK / PMI_SIZE (MPICH, Intel MPI, srun --mpi=pmi2)
//   7. SLURM_PROCID / SLURM_NTASKS, with the first host of
//      SLURM_JOB_NODELIST as the scheduler's host
// With none of them the process is a worker, as in MXNet.
//
// Sources 4-7 give only a rank r of W; the rank rule turns it into a role:
// with S servers and N workers (S + N = W), ranks 0..S-1 are servers and
// ranks S..W-1 are workers with worker id r - S. The scheduler is not one
// of the ranks: it runs at the scheduler address (dtrun starts it; by hand
// it is `dt-node` with DMLC_ROLE=scheduler). S and N come from explicit
// options, DMLC_NUM_SERVER / DMLC_NUM_WORKER, or DT_NUM_SERVER (N = W - S);
// with none of them S = W / 2 (rounded down) and N = W - S, which matches
// dtrun's default of as many servers as workers.
#pragma once

#include <optional>
#include <string>

#include "ps/job/job_config.h"

namespace dt::ps {

enum class LayoutSource { kExplicit, kDmlc, kMxConfig, kTorch, kOpenMpi, kPmi, kSlurm };

// "explicit options", "DMLC_*", "MX_CONFIG", "RANK/WORLD_SIZE",
// "OMPI_COMM_WORLD_*", "PMI_RANK/PMI_SIZE", "SLURM_PROCID/SLURM_NTASKS".
const char* layout_source_name(LayoutSource source);

// A value with the variable it came from, so that errors can name it.
template <typename T>
struct Sourced {
  T value;
  std::string variable;
};

struct LauncherLayout {
  LayoutSource source = LayoutSource::kDmlc;
  Role role = Role::kWorker;
  std::optional<Sourced<int>> worker_id;  // unset: the scheduler assigns one
  int rank = -1;                          // rank-only sources: this rank of world_size
  int world_size = 0;
  std::optional<Sourced<int>> num_servers;
  std::optional<Sourced<int>> num_workers;
  std::optional<Sourced<std::string>> root_uri;
  std::optional<Sourced<std::string>> root_port;  // text; the caller checks its range

  // "job layout from OMPI_COMM_WORLD_* (rank 3 of 4, 1 server + 3 workers): worker 2"
  std::string summary() const;
};

// Error(kInvalidArgument) naming the variable for a malformed value: an
// unknown DMLC_ROLE, a non-integer count or rank, MX_CONFIG that is not the
// operator's JSON, a rank-only launcher whose world size does not fit the
// server/worker counts, a bad SLURM_JOB_NODELIST.
LauncherLayout resolve_launcher_layout(const EnvLookup& env, const JobOverrides& overrides = {});

}  // namespace dt::ps
