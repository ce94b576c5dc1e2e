// --launcher mpi: the scheduler runs here under dtrun, started as in a local
// job (port 0, reported through a file); servers and workers are the S + W
// ranks of ONE `mpirun` that dtrun supervises like any other process. Every
// rank runs `dt-node [--env-server K=V]... [--env-worker K=V]... -- COMMAND`:
// dt-node finds its role from OMPI_COMM_WORLD_RANK by the rank rule of
// src/ps/job/launcher_environment.h (ranks 0..S-1 servers, S..S+W-1 workers
// with worker id rank - S; DMLC_NUM_SERVER and DMLC_NUM_WORKER are passed, so
// the rule cannot guess), serves as a server, or execs COMMAND as a worker.
//
// Stopping: mpirun ends the whole step by itself when one rank fails, and
// ends its ranks when dtrun stops the job (SIGTERM to the job's process
// group, which holds mpirun and the scheduler). Open MPI gives every rank a
// process group of its own, out of the job group's reach, so dtrun passes
// DTRUN_DIE_WITH_LAUNCHER=1 and dt-node arranges that a rank (and the worker
// it execs) is killed when its parent, mpirun or Open MPI's daemon, dies:
// even SIGKILL to mpirun leaves no rank behind.
//
// Without -H everything runs here (`--oversubscribe`, scheduler on
// 127.0.0.1); with -H the file goes to `mpirun --hostfile` as it is (Open
// MPI's format: "host slots=N"), and the scheduler's address is this host's
// (--interface picks the interface).
#pragma once

#include <string>
#include <vector>

#include "job.h"

namespace dt::dtrun {

// The variables every rank must see, passed by name with `-x` (mpirun
// forwards their values from its own environment, which dtrun sets): the
// layout (DMLC_*), OMP_WAIT_POLICY, DTRUN_DIE_WITH_LAUNCHER and --env.
std::vector<std::string> mpirun_forwarded_names(const EnvMap& inherited, const Options& options,
                                                const JobLayout& layout);

// The mpirun command line. as_root adds --allow-run-as-root (Open MPI
// refuses root without it).
std::vector<std::string> mpirun_argv(const EnvMap& inherited, const Options& options, const JobLayout& layout,
                                     const std::string& dt_node, bool as_root);

Outcome run_mpi(Supervisor& supervisor, const JobContext& job);

}  // namespace dt::dtrun
