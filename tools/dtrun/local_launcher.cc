#include "local_launcher.h"

#include "job_status.h"

namespace dt::dtrun {

Outcome run_local(Supervisor& supervisor, const JobContext& job) {
  const Options& o = job.options;
  JobLayout layout = job_layout(job, "127.0.0.1");
  JobStatus status = JobStatus::for_job(job);
  if (std::optional<Outcome> failed = start_scheduler(supervisor, job, layout)) return *failed;
  for (int s = 0; s < o.num_servers; ++s) {
    EnvMap env = child_environment(job.inherited, o, layout, Role::kServer, s);
    status.add_environment(Role::kServer, s, env);
    supervisor.start({{"server", s}, {job.dt_node}, env});
  }
  for (int w = 0; w < o.num_workers; ++w) {
    EnvMap env = child_environment(job.inherited, o, layout, Role::kWorker, w);
    status.add_environment(Role::kWorker, w, env);
    supervisor.start({{"worker", w}, o.command, env});
  }
  std::optional<Outcome> failed = supervisor.run_until(
      [&] {
        status.tick(supervisor);
        return supervisor.all_exited("worker");
      },
      job.deadline, [&] { return timed_out(o); });
  if (failed) {
    status.print_table();
    return *failed;
  }
  // The table once the servers have ended too: their last writes hold
  // their whole run.
  const Outcome outcome = finish(supervisor, job);
  status.print_table();
  return outcome;
}

}  // namespace dt::dtrun
