// dtrun's live job summary (--status-every S): every worker's trainer and
// every server rewrites a status file (DT_STATUS_FILE, src/core/status_file.h)
// in a folder of dtrun's; every S seconds this reads them and prints one
// line on stdout: each worker's step and images/s, the slowest worker and
// how far behind, each server's requests/s and how busy it was, the
// workers' bytes/s in and out, the restarts and losses so far. At the end
// of the job, a table per process (workers, then servers): compute,
// communication and waiting on the others, in seconds.
//
// A worker's "waiting on the others" is an estimate: its exchange time
// (train_batch past forward and backward) less the least exchange time of
// any worker, since in a synchronous job the worker every round waits for
// spends the least there; communication is the rest of its exchange time.
// A server's three are measured (src/ps/server/work_clock.h): they split
// its time since its first request.
//
// Under --launcher local each process writes its own file there. Under
// ssh, mpi and slurm the processes run on other hosts, so they send their
// numbers with their heartbeats to the scheduler, which dtrun starts here
// with DT_STATUS_DIR and which writes the same files
// (src/ps/scheduler/status_relay.h); this reads them alike.
//
// Threading: the supervisor's loop calls tick(); no thread of its own.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "environment.h"
#include "job.h"
#include "supervisor.h"
#include "core/status_line.h"

namespace dt::dtrun {

// What the processes' files said at one moment (a process without a file
// yet: all zero).
struct JobNumbers {
  std::vector<core::WorkerStatus> workers;  // by rank
  std::vector<core::ServerStatus> servers;  // by rank
};

// --status-every when not given: every 10 s when stdout is a terminal, else off.
double status_interval(double option_s, bool stdout_is_terminal);

class JobStatus {
 public:
  // dir: an existing folder of dtrun's; every_s 0: off (nothing is
  // printed, no variable set). restarts_before: whole-job restarts so far.
  // relayed: the files come through the scheduler (see above).
  JobStatus(std::string dir, int num_workers, int num_servers, double every_s, int restarts_before,
            bool relayed = false);
  // The job's: --status-every (status_interval), a folder in its work
  // directory, its whole-job restarts so far, relayed unless the launcher
  // is local.
  static JobStatus for_job(const JobContext& job);

  bool on() const { return every_s_ > 0; }
  // A worker's or server's: DT_STATUS_FILE and DT_STATUS_EVERY_S, or only
  // DT_STATUS_EVERY_S when relayed (rank ignored then, the same for all).
  // None when off, none for the scheduler.
  void add_environment(Role role, int rank, EnvMap& env) const;
  // The scheduler's: DT_STATUS_DIR when relayed, else nothing.
  EnvMap scheduler_environment() const;
  // Prints the line when due.
  void tick(const Supervisor& supervisor);
  // Reads the files a last time and prints the table (nothing when off or
  // when no process wrote one). After the servers ended: their files then
  // hold their whole run.
  void print_table();

  // The line for the numbers read now (previous: the last ones printed, or
  // none), for tests.
  static std::string line(double elapsed_s, const JobNumbers& now, const JobNumbers& previous, double interval_s,
                          int restarts, int losses);
  static std::string table(const JobNumbers& numbers);

 private:
  std::string file_of(Role role, int rank) const;
  JobNumbers read_all() const;

  const std::string dir_;
  const int num_workers_;
  const int num_servers_;
  const double every_s_;
  const int restarts_before_;
  const bool relayed_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point printed_ = started_;
  JobNumbers previous_;
};

}  // namespace dt::dtrun
