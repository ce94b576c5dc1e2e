// --launcher slurm, inside an allocation (salloc/sbatch): the scheduler runs
// here, under dtrun, with port 0 as in a local job; servers and workers are
// the S + W tasks of one `srun --multi-prog` step, tasks 0..S-1 servers and
// S..S+W-1 workers (worker id = task offset, srun's %o). srun propagates its
// environment (DMLC_PS_ROOT_URI = this host's address, the port, the counts,
// --env) to every task, and --kill-on-bad-exit ends the step when one task
// fails; dtrun supervises srun and the scheduler like any other processes.
#pragma once

#include <string>
#include <vector>

#include "job.h"

namespace dt::dtrun {

// The srun command line for the job's step.
std::vector<std::string> srun_argv(const Options& options, const std::string& multi_prog_path);

// The --multi-prog file: one line for the servers, one for the workers, each
// setting the role (and the role's --env-server/--env-worker) through env(1).
// Throws UsageError for an argument the file format cannot carry
// (whitespace, quotes, backslashes or '%').
std::string multi_prog_text(const EnvMap& inherited, const Options& options, const std::string& dt_node);

Outcome run_slurm(Supervisor& supervisor, const JobContext& job);

}  // namespace dt::dtrun
