#include "local_launcher.h"

#include "job_status.h"

namespace dt::dtrun {

Outcome run_local(Supervisor& supervisor, const JobContext& job) {
  const Options& o = job.options;
  JobLayout layout = job_layout(job, "127.0.0.1");
  if (std::optional<Outcome> failed = start_scheduler(supervisor, job, layout)) return *failed;
  for (int s = 0; s < o.num_servers; ++s) {
    supervisor.start({{"server", s}, {job.dt_node}, child_environment(job.inherited, o, layout, Role::kServer, s)});
  }
  JobStatus status = JobStatus::for_job(job);
  for (int w = 0; w < o.num_workers; ++w) {
    EnvMap env = child_environment(job.inherited, o, layout, Role::kWorker, w);
    status.add_environment(w, env);
    supervisor.start({{"worker", w}, o.command, env});
  }
  std::optional<Outcome> failed = supervisor.run_until(
      [&] {
        status.tick(supervisor);
        return supervisor.all_exited("worker");
      },
      job.deadline, [&] { return timed_out(o); });
  status.print_table();
  if (failed) return *failed;
  return finish(supervisor, job);
}

}  // namespace dt::dtrun
