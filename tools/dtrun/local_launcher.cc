#include "local_launcher.h"

namespace dt::dtrun {

Outcome run_local(Supervisor& supervisor, const JobContext& job) {
  const Options& o = job.options;
  JobLayout layout = job_layout(job, "127.0.0.1");
  if (std::optional<Outcome> failed = start_scheduler(supervisor, job, layout)) return *failed;
  for (int s = 0; s < o.num_servers; ++s) {
    supervisor.start({{"server", s}, {job.dt_node}, child_environment(job.inherited, o, layout, Role::kServer, s)});
  }
  for (int w = 0; w < o.num_workers; ++w) {
    supervisor.start({{"worker", w}, o.command, child_environment(job.inherited, o, layout, Role::kWorker, w)});
  }
  std::optional<Outcome> failed =
      supervisor.run_until([&] { return supervisor.all_exited("worker"); }, job.deadline, [&] { return timed_out(o); });
  if (failed) return *failed;
  return finish(supervisor, job);
}

}  // namespace dt::dtrun
