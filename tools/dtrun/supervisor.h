// Owns the processes of a job on this host: starts them in one process group
// that it creates (the first process leads it), pumps their output through
// LinePrefixers, reaps them, and decides when the job must stop: the first
// process that exits non-zero or is killed (but for workers under
// continue_after_worker_loss, which may also be started again in place, and
// servers under tolerated_server_losses, which may be started again in place
// under servers_rejoin), a signal to dtrun, or a deadline.
// stop() ends every process of the group: SIGTERM, then SIGKILL after a
// grace period, and reaps them all.
//
// dtrun is made a child subreaper, so processes that a child forks and
// leaves behind are reparented to it and reaped here too: "no children left"
// (waitpid's ECHILD) then means that nothing the job started still runs.
// Children also get PR_SET_PDEATHSIG(SIGKILL), so even SIGKILL to dtrun
// takes its direct children down.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "environment.h"
#include "line_prefixer.h"
#include "signal_pipe.h"
#include "unique_fd.h"

namespace dt::dtrun {

using Clock = std::chrono::steady_clock;

// "worker 1", "server 0", "scheduler" (rank -1).
struct ProcessName {
  ProcessName(std::string role_, int rank_ = -1) : role(std::move(role_)), rank(rank_) {}
  std::string role;
  int rank;
  std::string text() const;
};

struct ChildSpec {
  ProcessName name;
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  EnvMap env;
};

// What a worker or server restarted in place runs at its restart_count-th
// restart (see SupervisorSettings::max_restarts and servers_rejoin).
using RestartedSpec = std::function<ChildSpec(int restart_count)>;

// Why a job stopped, as dtrun reports it.
struct Outcome {
  int exit_code = 0;
  std::string message;  // empty for a job that ended cleanly
  // A process of the job failed (what --max-restarts restarts the job
  // after); not a signal to dtrun, a deadline or a launcher's own error.
  bool process_failed = false;
};

// "exited with status 3", "killed by signal 9 (Killed)"; the exit code a
// shell would give: the status, or 128 + the signal.
std::string describe_wait_status(int status);
int exit_code_of(int status);

// A worker or server that was started again in place, and how many times.
struct RestartedProcess {
  std::string name;
  int restarts = 0;
};

struct SupervisorSettings {
  std::string log_dir;  // empty: no log files
  bool append_logs = false;  // a restarted job's processes add to the first run's log files
  bool colour_stdout = false;
  bool colour_stderr = false;
  std::chrono::milliseconds grace{3000};          // SIGTERM -> SIGKILL
  std::chrono::milliseconds kill_wait{5000};      // after SIGKILL, for the reaping
  std::chrono::milliseconds output_drain{2000};   // for pipes still open after the last exit
  // DT_WORKER_LOSS=continue: a worker that fails while another still runs
  // is reported and the job goes on (the scheduler drops it); the last
  // worker, a server or the scheduler failing still stops the job.
  bool continue_after_worker_loss = false;
  // --max-restarts, one budget for restarts of either kind, as torchrun's:
  // with continue_after_worker_loss, a worker that fails while another still
  // runs is started again in place, alone (same spec and log file, and
  // DT_WORKER_RESTART_COUNT), and rejoins the running job, which the
  // scheduler lets it do in the place of the worker it lost; servers too,
  // under servers_rejoin. Once restarts_done (those of earlier runs of the
  // job, both kinds) and this run's restarts in place of workers and servers
  // reach max_restarts, a failed worker is left out as above. Whole-job
  // restarts are main's, after a run failed.
  int max_restarts = 0;
  int restarts_done = 0;
  // DT_SERVER_REPLICATION=1: every key part has a replica on the next
  // server, so this many servers may fail while another still runs and the
  // job goes on with the replicas of their keys; one more server failing, or
  // the scheduler, still stops the job.
  int tolerated_server_losses = 0;
  // DT_SERVER_REPLICATION=1 with 2 or more servers: a server that fails
  // while another still runs is started again in place, alone, as a worker
  // is under max_restarts (same spec and log file, and
  // DT_WORKER_RESTART_COUNT), out of the same budget; the scheduler takes it
  // in the lost server's place, as a replica of its keys. It came back, so
  // it is no loss for tolerated_server_losses. With the budget spent, a
  // failed server is left out under tolerated_server_losses as before.
  bool servers_rejoin = false;
};

class Supervisor {
 public:
  Supervisor(SignalPipe& signals, SupervisorSettings settings);
  // Stops whatever still runs (as stop()).
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts a process in the job's process group. Throws std::runtime_error
  // when it cannot be started (the command does not exist, pipes or fork
  // fail); a process that got as far as fork is still owned and reaped.
  // restarted: what the process runs when, as a worker or a server, it is
  // restarted in place. When empty, spec with DT_WORKER_RESTART_COUNT added
  // to env: all that a process of this host needs; a launcher whose env does
  // not reach the process (ssh) passes its own. It is called only from run_until
  // before the job stops, so it may refer to what the launcher holds while
  // it runs the job.
  pid_t start(const ChildSpec& spec, RestartedSpec restarted = {});

  // The job's process group id (the first process's pid); 0 before any start.
  pid_t process_group() const { return pgid_; }

  // Pumps output and reaps until done() holds (then nullopt), or returns what
  // stops the job: a process that failed, SIGINT (130), SIGTERM (143),
  // SIGHUP (129), or on_deadline() once deadline passes.
  std::optional<Outcome> run_until(const std::function<bool()>& done, Clock::time_point deadline,
                                   const std::function<Outcome()>& on_deadline);

  bool all_exited(const std::string& role) const;  // every started process of the role has exited
  bool all_exited() const;
  bool has_exited(pid_t pid) const;
  // Workers that failed and that the job went on without, e.g. "worker 2".
  const std::vector<std::string>& lost_workers() const { return lost_workers_; }
  // How many times a failed process, of either role, was started again in
  // place in this run: what the run spent of --max-restarts' budget.
  int restarts() const { return worker_restarts_ + server_restarts_; }
  // Of those, the restarts of workers and of servers.
  int worker_restarts() const { return worker_restarts_; }
  int server_restarts() const { return server_restarts_; }
  // Workers started again in place that were not lost afterwards, in the
  // order of their first restart, e.g. {"worker 1", 1}.
  std::vector<RestartedProcess> rejoined_workers() const;
  // Servers started again in place that were not lost afterwards (they
  // serve as replicas of the lost server's keys), e.g. {"server 1", 1}.
  std::vector<RestartedProcess> rejoined_servers() const;
  // Servers that failed and whose keys the job went on with from their
  // replicas, e.g. "server 1".
  const std::vector<std::string>& lost_servers() const { return lost_servers_; }
  // Names of started processes that have not exited, e.g. "server 0, scheduler".
  std::string still_running() const;

  // Ends every process of the job and reaps them, bounded by the settings'
  // times; a second SIGINT/SIGTERM meanwhile skips to SIGKILL. Idempotent.
  void stop();
  // A SIGINT, SIGTERM or SIGHUP came while stop() ran: the user wants the
  // job over, so it must not be restarted.
  bool interrupted_while_stopping() const { return interrupted_while_stopping_; }

 private:
  struct Child;
  struct Events {
    std::vector<int> signals;
    std::vector<Child*> exits;
  };

  Events poll_once(std::chrono::milliseconds timeout);
  // run_until's loop.
  std::optional<Outcome> next_outcome(const std::function<bool()>& done, Clock::time_point deadline,
                                      const std::function<Outcome()>& on_deadline);
  void reap(Events& events);
  void signal_group(int signo);
  // Pumps until pred() holds or the deadline; returns whether pred() held.
  // Returns early (false) on SIGINT/SIGTERM/SIGHUP when interruptible.
  bool pump_while_stopping(const std::function<bool()>& pred, Clock::time_point deadline, bool interruptible);
  bool any_output_open() const;
  // Whether a failed process is one to start again in place, to rejoin the
  // running job: a worker under continue_after_worker_loss or a server
  // under servers_rejoin, max_restarts not spent
  // by the restarts done and the `pending` ones of this round, another
  // process of its role still runs, the job is not stopping, and deadline
  // has not passed.
  bool may_rejoin(const Child& failed, Clock::time_point deadline, int pending) const;
  // Says so on stderr and starts it again. Throws as start() does.
  void restart_to_rejoin(const Child& failed);
  // start() of a process's first run or of its restart_count-th restart in
  // place, whose output goes on in the log file of the first.
  pid_t start_child(const ChildSpec& spec, RestartedSpec restarted, bool append_log, int restart_count);
  // A failed worker the job goes on without (continue_after_worker_loss and
  // another worker still runs); says so on stderr and records it.
  bool tolerated_worker_loss(const Child& failed);
  // A failed server the job goes on without (fewer than
  // tolerated_server_losses lost so far and another server still runs); says
  // so on stderr and records it.
  bool tolerated_server_loss(const Child& failed);
  // Both: failed was started again in place and found the job over, every
  // other process of its role having exited 0; says so on stderr (naming
  // the variable that had it restarted), records failed in lost and returns
  // true.
  bool found_no_job_to_rejoin(const Child& failed, const std::string& variable, std::vector<std::string>& lost);
  // Both: when another process of failed's role still runs, says on stderr
  // that the job goes on (how), records failed in lost and returns true.
  bool go_on_without(const Child& failed, const std::string& how, std::vector<std::string>& lost);
  // Another process of failed's role has not exited.
  bool others_of_role_run(const Child& failed) const;
  // Every process of failed's role other than failed's rank (its earlier
  // runs) exited 0.
  bool others_of_role_succeeded(const Child& failed) const;

  SignalPipe& signals_;
  SupervisorSettings settings_;
  std::vector<std::unique_ptr<Child>> children_;
  pid_t pgid_ = 0;
  bool children_left_ = false;  // some process we must reap may still exist
  std::vector<std::string> lost_workers_;
  std::vector<std::string> lost_servers_;
  int worker_restarts_ = 0;
  int server_restarts_ = 0;
  std::vector<RestartedProcess> restarted_workers_;  // each once
  std::vector<RestartedProcess> restarted_servers_;  // each once
  // run_until returned what stops the job: no process is started again after.
  bool stopping_ = false;
  bool interrupted_while_stopping_ = false;
};

}  // namespace dt::dtrun
