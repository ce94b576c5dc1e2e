#include "mpi_launcher.h"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "host_address.h"
#include "job_status.h"

namespace dt::dtrun {

namespace {

constexpr const char* kDieWithLauncherVariable = "DTRUN_DIE_WITH_LAUNCHER";
// How long mpirun may take to report a failed rank after another process
// of the job noticed it.
constexpr int kMpirunReportS = 3;

// Options without the role settings: what every rank gets through -x.
Options common_only(const Options& options) {
  Options common = options;
  common.env_server.clear();
  common.env_worker.clear();
  return common;
}

// Options with only the role settings: they go on dt-node's command line.
Options roles_only(const Options& options) {
  Options roles = options;
  roles.env.clear();
  return roles;
}

}  // namespace

std::vector<std::string> mpirun_forwarded_names(const EnvMap& inherited, const Options& options,
                                                const JobLayout& layout) {
  std::set<std::string> names = {"DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER",
                                 "OMP_WAIT_POLICY", kDieWithLauncherVariable, kRestartCountVariable};
  if (!layout.interface.empty()) names.insert("DMLC_INTERFACE");
  // The job's secret and TLS files: by name, so that the secret's value
  // travels in mpirun's environment, never on its command line.
  for (const char* name : {"DT_JOB_SECRET", "DT_JOB_SECRET_FILE", "DT_TLS_CERT_FILE", "DT_TLS_KEY_FILE", "DT_TLS_CA_FILE"}) {
    if (inherited.count(name) != 0) names.insert(name);
  }
  for (const auto& [name, value] : user_settings(inherited, common_only(options), Role::kWorker)) names.insert(name);
  return {names.begin(), names.end()};
}

std::vector<std::string> mpirun_argv(const EnvMap& inherited, const Options& options, const JobLayout& layout,
                                     const std::string& dt_node, bool as_root) {
  std::vector<std::string> argv = {"mpirun"};
  if (as_root) argv.push_back("--allow-run-as-root");
  if (options.hostfile.empty()) {
    // All ranks share this host's cores; Open MPI refuses more ranks than
    // cores without it.
    argv.push_back("--oversubscribe");
  } else {
    argv.insert(argv.end(), {"--hostfile", options.hostfile});
  }
  // "[1,2]<stdout>:" on every line: which rank wrote it (dtrun can only
  // prefix mpirun's combined output).
  argv.push_back("--tag-output");
  argv.insert(argv.end(), {"-np", std::to_string(options.num_servers + options.num_workers)});
  for (const std::string& name : mpirun_forwarded_names(inherited, options, layout)) {
    argv.insert(argv.end(), {"-x", name});
  }
  argv.push_back(dt_node);
  const Options roles = roles_only(options);
  for (const auto& [name, value] : user_settings(inherited, roles, Role::kServer)) {
    argv.insert(argv.end(), {"--env-server", name + "=" + value});
  }
  for (const auto& [name, value] : user_settings(inherited, roles, Role::kWorker)) {
    argv.insert(argv.end(), {"--env-worker", name + "=" + value});
  }
  argv.push_back("--");
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

Outcome run_mpi(Supervisor& supervisor, const JobContext& job) {
  const Options& o = job.options;
  JobLayout layout = job_layout(job, o.hostfile.empty() ? "127.0.0.1" : host_address(o.interface));
  // The live summary: the ranks' numbers come through the scheduler.
  JobStatus status = JobStatus::for_job(job);
  if (std::optional<Outcome> failed = start_scheduler(supervisor, job, layout, status.scheduler_environment())) {
    return *failed;
  }
  EnvMap env = launcher_environment(job.inherited, o, layout);
  env[kDieWithLauncherVariable] = "1";
  std::vector<std::string> argv = mpirun_argv(job.inherited, o, layout, job.dt_node, geteuid() == 0);
  EnvMap relayed;
  status.add_environment(Role::kWorker, -1, relayed);
  for (const auto& [name, value] : relayed) {
    env[name] = value;
    argv.insert(argv.begin() + 1, {"-x", name});
  }
  supervisor.start({{"mpirun", -1}, argv, env});
  std::optional<Outcome> failed = supervisor.run_until(
      [&] {
        status.tick(supervisor);
        return supervisor.all_exited("mpirun");
      },
      job.deadline, [&] { return timed_out(o); });
  if (failed && failed->message.rfind("mpirun ", 0) != 0 && failed->exit_code != 124 && failed->exit_code < 128 &&
      !supervisor.all_exited("mpirun")) {
    // When a rank fails, mpirun ends the other ranks, and the scheduler may
    // report a lost server before mpirun reports the rank that failed first
    // (with that rank's exit code); the rank is the better answer.
    const Clock::time_point grace = std::min(job.deadline, Clock::now() + std::chrono::seconds(kMpirunReportS));
    if (std::optional<Outcome> from_mpirun = supervisor.run_until(
            [&] { return supervisor.all_exited("mpirun"); }, grace, [&] { return *failed; })) {
      failed = from_mpirun;
    }
  }
  if (failed) {
    if (failed->message.rfind("mpirun ", 0) == 0) {
      failed->message += " (a rank failed: mpirun's message above names it; rank r < " +
                         std::to_string(o.num_servers) + " is server r, else worker r - " +
                         std::to_string(o.num_servers) + ")";
    }
    status.print_table();
    return *failed;
  }
  const Outcome outcome = finish(supervisor, job);
  status.print_table();
  return outcome;
}

}  // namespace dt::dtrun
