#include "slurm_launcher.h"

#include <fstream>

#include "host_address.h"
#include "job_status.h"

namespace dt::dtrun {

namespace {

std::string checked(const std::string& arg) {
  if (arg.empty() || arg.find_first_of(" \t\n\r\"'\\%") != std::string::npos) {
    throw UsageError("--launcher slurm: the argument \"" + arg +
                     "\" is empty or holds whitespace, quotes, '\\' or '%', which srun --multi-prog cannot pass");
  }
  return arg;
}

// "0-1", or "2" for a range of one task.
std::string task_range(int first, int last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

std::vector<std::string> srun_argv(const Options& options, const std::string& multi_prog_path) {
  return {"srun",
          "--ntasks=" + std::to_string(options.num_servers + options.num_workers),
          "--kill-on-bad-exit=1",
          "--label",
          "--multi-prog",
          multi_prog_path};
}

std::string multi_prog_text(const EnvMap& inherited, const Options& options, const std::string& dt_node) {
  const int s = options.num_servers;
  const int w = options.num_workers;
  // --env reaches the tasks through srun's own environment; only the role's
  // settings go on the lines.
  Options role_only = options;
  role_only.env.clear();
  std::string server = task_range(0, s - 1) + " env DMLC_ROLE=server";
  for (const auto& [name, value] : user_settings(inherited, role_only, Role::kServer)) {
    server += " " + checked(name + "=" + value);
  }
  server += " " + checked(dt_node);
  // %o is srun's offset of the task within the line's range: the worker id.
  std::string worker = task_range(s, s + w - 1) + " env DMLC_ROLE=worker DMLC_WORKER_ID=%o";
  for (const auto& [name, value] : user_settings(inherited, role_only, Role::kWorker)) {
    worker += " " + checked(name + "=" + value);
  }
  for (const std::string& word : options.command) worker += " " + checked(word);
  return server + "\n" + worker + "\n";
}

Outcome run_slurm(Supervisor& supervisor, const JobContext& job) {
  const Options& o = job.options;
  JobLayout layout = job_layout(job, host_address(o.interface));
  const std::string multi_prog = job.work_dir + "/srun.multi-prog";
  {
    std::ofstream out(multi_prog);
    out << multi_prog_text(job.inherited, o, job.dt_node);
    if (!out) throw std::runtime_error("cannot write " + multi_prog);
  }
  // The live summary: the tasks' numbers come through the scheduler; srun
  // passes its environment on to them.
  JobStatus status = JobStatus::for_job(job);
  if (std::optional<Outcome> failed = start_scheduler(supervisor, job, layout, status.scheduler_environment())) {
    return *failed;
  }
  EnvMap env = launcher_environment(job.inherited, o, layout);
  status.add_environment(Role::kWorker, -1, env);
  supervisor.start({{"srun", -1}, srun_argv(o, multi_prog), env});
  std::optional<Outcome> failed = supervisor.run_until(
      [&] {
        status.tick(supervisor);
        return supervisor.all_exited("srun");
      },
      job.deadline, [&] { return timed_out(o); });
  const Outcome outcome = failed ? *failed : finish(supervisor, job);
  status.print_table();
  return outcome;
}

}  // namespace dt::dtrun
