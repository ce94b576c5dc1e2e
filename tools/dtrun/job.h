// The parts of a job that every launcher shares: the scheduler, started here
// with port 0 so that it binds a free port itself and reports it through a
// file (no "probe a free port, close it, hope" race between jobs), and the
// end of a job, when the processes that do the work have finished and the
// rest must shut down by themselves within a bound.
#pragma once

#include <optional>
#include <string>

#include "environment.h"
#include "options.h"
#include "supervisor.h"

namespace dt::dtrun {

struct JobContext {
  const Options& options;
  EnvMap inherited;        // dtrun's environment
  std::string dt_node;     // the scheduler/server program
  std::string work_dir;    // private scratch directory (the port file)
  Clock::time_point deadline;  // --timeout, or Clock::time_point::max()
  int restart_count = 0;       // 0 for the first run, k for the k-th restart (--max-restarts)
};

// The layout every launcher starts from: the options' counts and interface,
// the restart count, and the scheduler's address as the launcher sees it.
JobLayout job_layout(const JobContext& job, std::string root_uri);

// How long the scheduler may take to report its port, and how long servers
// and scheduler may take to shut down after the last worker finished (dt-node
// needs its DT_SHUTDOWN_TIMEOUT_S, 10 s by default, at most).
constexpr double kSchedulerStartS = 60;
constexpr double kShutdownS = 30;

// The dt-node to run: $DT_NODE_BINARY, else dt-node beside this dtrun, else
// "dt-node" from PATH.
std::string find_dt_node(const EnvMap& inherited);

// Starts the scheduler and waits for its port; fills layout.root_port.
// Returns the outcome that ends the job when that fails. extra: variables
// for the scheduler alone (JobStatus::scheduler_environment).
std::optional<Outcome> start_scheduler(Supervisor& supervisor, const JobContext& job, JobLayout& layout,
                                       const EnvMap& extra = {});

// After the work is done: waits for every remaining process to exit cleanly.
Outcome finish(Supervisor& supervisor, const JobContext& job);

// The outcome when --timeout passes.
Outcome timed_out(const Options& options);

}  // namespace dt::dtrun
