// dtrun: starts a disttrain parameter-server job (scheduler, servers, workers)
// and owns its processes until the last one is reaped. See usage_text() and
// docs/launching.md.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "environment.h"
#include "job.h"
#include "job_secret.h"
#include "job_tls.h"
#include "line_prefixer.h"
#include "local_launcher.h"
#include "mpi_launcher.h"
#include "options.h"
#include "signal_pipe.h"
#include "slurm_launcher.h"
#include "ssh_launcher.h"
#include "supervisor.h"
#include "temp_dir.h"
#include "timeline_merge.h"

namespace {

void say(const std::string& text) {
  const std::string line = "dtrun: " + text + "\n";
  dt::dtrun::write_all(STDERR_FILENO, line.data(), line.size());
}

// What one run of the job leaves for the next decision and the summary.
struct RunReport {
  dt::dtrun::Outcome outcome;
  std::vector<std::string> lost_workers;
  std::vector<std::string> lost_servers;
  std::vector<dt::dtrun::RestartedProcess> rejoined_workers;
  std::vector<dt::dtrun::RestartedProcess> rejoined_servers;
  int restarts = 0;  // in place, of workers and servers: of --max-restarts' budget
};

// One run of the whole job under its own supervisor, which has stopped
// every process of it when this returns.
RunReport run_once(const dt::dtrun::JobContext& job, dt::dtrun::SignalPipe& signals,
                   const dt::dtrun::SupervisorSettings& settings) {
  using namespace dt::dtrun;
  const Options& options = job.options;
  Supervisor supervisor(signals, settings);
  Outcome outcome;
  try {
    if (options.launcher == Launcher::kSsh) {
      outcome = run_ssh(supervisor, job, signals, settings);
    } else if (options.launcher == Launcher::kMpi) {
      outcome = run_mpi(supervisor, job);
    } else {
      outcome = options.launcher == Launcher::kSlurm ? run_slurm(supervisor, job) : run_local(supervisor, job);
    }
  } catch (const std::exception& e) {
    outcome = Outcome{127, e.what()};
  }
  if (outcome.exit_code != 0) say(outcome.message + "; stopping the job (process group " +
                                  std::to_string(supervisor.process_group()) + ")");
  supervisor.stop();
  if (supervisor.interrupted_while_stopping() && outcome.process_failed) {
    say("interrupted while the failed job stopped: no restart");
    outcome.process_failed = false;
  }
  return RunReport{outcome, supervisor.lost_workers(), supervisor.lost_servers(), supervisor.rejoined_workers(),
                   supervisor.rejoined_servers(), supervisor.restarts()};
}

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// "1 restart", "3 restarts".
std::string counted_restarts(int restarts) {
  return std::to_string(restarts) + (restarts == 1 ? " restart" : " restarts");
}

// The summary's last line for a job that ended cleanly.
std::string clean_end(const RunReport& run) {
  std::string text;
  if (run.lost_workers.empty() && run.lost_servers.empty()) {
    text = "every process exited cleanly";
  } else {
    std::string went_on;
    if (!run.lost_workers.empty()) went_on = "without " + listed(run.lost_workers) + " (DT_WORKER_LOSS=continue)";
    if (!run.lost_servers.empty()) {
      went_on += (went_on.empty() ? "" : " and ") + std::string("without ") + listed(run.lost_servers) +
                 ", on the replicas of its keys (DT_SERVER_REPLICATION=1)";
    }
    text = "every other process exited cleanly; the job went on " + went_on;
  }
  for (const auto* rejoined : {&run.rejoined_workers, &run.rejoined_servers}) {
    for (const dt::dtrun::RestartedProcess& p : *rejoined) {
      text += "; " + p.name + " rejoined the job after " +
              (p.restarts == 1 ? "a restart" : counted_restarts(p.restarts));
    }
  }
  return text;
}

// --timeline: the processes' files into one; a failure is reported, never
// the job's outcome.
void merge_timelines(const dt::dtrun::Options& options) {
  try {
    const dt::dtrun::TimelineMerge m = dt::dtrun::merge_timeline(options.timeline, options.num_servers,
                                                                 options.num_workers);
    std::string text = "timeline of " + std::to_string(m.merged.size()) + " processes (" + std::to_string(m.events) +
                       " events) in " + options.timeline;
    if (m.dropped > 0) text += "; the processes' rings dropped " + std::to_string(m.dropped) + " older events (DT_TIMELINE_EVENTS)";
    say(text);
    if (!m.missing.empty()) say("timeline: no file from " + listed(m.missing));
    for (const std::string& why : m.unreadable) say("timeline: left out " + why);
  } catch (const std::exception& e) {
    say(std::string("timeline: ") + e.what());
  }
}

int run(const dt::dtrun::Options& options) {
  using namespace dt::dtrun;
  // Installed before any child exists, so no SIGCHLD or Ctrl-C is missed.
  SignalPipe signals;
  TempDir work("dtrun");
  EnvMap inherited = current_environment();
  // Every process of the job proves it holds this before its first message;
  // a restarted job keeps the secret and the TLS files of the first run.
  for (const auto& [name, value] : job_secret_environment(inherited)) inherited[name] = value;
  if (options.tls) {
    // Every process (scheduler, servers, workers) gets the job's files.
    for (const auto& [name, value] : make_job_tls(work.path())) inherited[name] = value;
  }
  JobContext job{options, inherited, find_dt_node(inherited), work.path(),
                 options.timeout_s > 0 ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                            std::chrono::duration<double>(options.timeout_s))
                                       : Clock::time_point::max()};
  SupervisorSettings settings;
  settings.log_dir = options.log_dir;
  settings.colour_stdout = isatty(STDOUT_FILENO) == 1;
  settings.colour_stderr = isatty(STDERR_FILENO) == 1;
  settings.continue_after_worker_loss = continues_after_worker_loss(options, inherited);
  settings.tolerated_server_losses = tolerated_server_losses(options, inherited);
  // The supervisor spends the budget on restarting alone the workers that
  // fail under --worker-loss continue and the servers that fail in a
  // replicated job (local and ssh: the launchers that own each process);
  // what it leaves, a whole-job restart may use.
  settings.max_restarts = options.max_restarts;
  // A replicated job's scheduler takes a server started again in the place
  // of the one it lost, as a replica of its keys; the budget is the same.
  settings.servers_rejoin = settings.tolerated_server_losses > 0 && options.num_servers >= 2;
  RunReport run = run_once(job, signals, settings);
  int restarts = run.restarts;  // of either kind: one budget
  // torchrun's --max-restarts: the failed job starts again, whole, and its
  // processes resume from what they saved. Only a process's failure is worth
  // another run; Ctrl-C and --timeout are the user's decisions.
  while (run.outcome.exit_code != 0 && run.outcome.process_failed && restarts < options.max_restarts) {
    ++job.restart_count;
    ++restarts;
    settings.append_logs = true;
    settings.restarts_done = restarts;
    say("restarting the whole job (restart " + std::to_string(restarts) + " of at most " +
        std::to_string(options.max_restarts) + ", DT_RESTART_COUNT=" + std::to_string(job.restart_count) + ")");
    run = run_once(job, signals, settings);
    restarts += run.restarts;
  }
  if (!options.timeline.empty()) merge_timelines(options);
  const std::string after = restarts == 0 ? "" : " (after " + counted_restarts(restarts) + ")";
  if (run.outcome.exit_code != 0) {
    say("job failed" + after + ": " + run.outcome.message);
  } else {
    say("job finished" + after + ": " + clean_end(run));
  }
  return run.outcome.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  dt::dtrun::Options options;
  try {
    options = dt::dtrun::parse_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const dt::dtrun::UsageError& e) {
    std::fprintf(stderr, "dtrun: %s\n\n%s", e.what(), dt::dtrun::usage_text());
    return 2;
  }
  if (options.help) {
    std::fputs(dt::dtrun::usage_text(), stdout);
    return 0;
  }
  for (const std::string& note : options.notes) std::fprintf(stderr, "dtrun: %s\n", note.c_str());
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrun: %s\n", e.what());
    return 1;
  }
}
