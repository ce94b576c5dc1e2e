#include "job.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>

namespace dt::dtrun {

namespace {

Clock::time_point seconds_from_now(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", seconds);
  return buf;
}

// The port in a file the scheduler renamed into place; nullopt until then.
std::optional<int> read_port(const std::string& path) {
  std::ifstream in(path);
  int port = 0;
  if (in >> port && port > 0 && port < 65536) return port;
  return std::nullopt;
}

}  // namespace

std::string find_dt_node(const EnvMap& inherited) {
  if (auto it = inherited.find("DT_NODE_BINARY"); it != inherited.end() && !it->second.empty()) return it->second;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir.erase(dir.rfind('/') + 1);
    const std::string beside = dir + "dt-node";
    if (access(beside.c_str(), X_OK) == 0) return beside;
  }
  return "dt-node";
}

JobLayout job_layout(const JobContext& job, std::string root_uri) {
  JobLayout layout;
  layout.root_uri = std::move(root_uri);
  layout.num_servers = job.options.num_servers;
  layout.num_workers = job.options.num_workers;
  layout.interface = job.options.interface;
  layout.restart_count = job.restart_count;
  return layout;
}

Outcome timed_out(const Options& options) {
  return Outcome{124, "timed out after " + seconds_text(options.timeout_s) + " (--timeout)"};
}

std::optional<Outcome> start_scheduler(Supervisor& supervisor, const JobContext& job, JobLayout& layout,
                                       const EnvMap& extra) {
  layout.port_file = job.work_dir + "/scheduler.port";
  // A restarted job's scheduler binds a new port; the last run's file must
  // not be taken for its report.
  std::remove(layout.port_file.c_str());
  ChildSpec spec{{"scheduler", -1}, {job.dt_node}, child_environment(job.inherited, job.options, layout, Role::kScheduler, -1)};
  for (const auto& [name, value] : extra) spec.env[name] = value;
  const pid_t pid = supervisor.start(spec);
  std::optional<int> port;
  const Clock::time_point start_deadline = std::min(job.deadline, seconds_from_now(kSchedulerStartS));
  std::optional<Outcome> failed = supervisor.run_until(
      [&] {
        port = read_port(layout.port_file);
        return port.has_value() || supervisor.has_exited(pid);
      },
      start_deadline,
      [&] {
        if (Clock::now() >= job.deadline) return timed_out(job.options);
        return Outcome{1, "the scheduler did not report its port within " + seconds_text(kSchedulerStartS)};
      });
  if (failed) return failed;
  if (!port) return Outcome{1, "the scheduler exited before it reported its port"};
  layout.root_port = *port;
  return std::nullopt;
}

Outcome finish(Supervisor& supervisor, const JobContext& job) {
  const Clock::time_point deadline = std::min(job.deadline, seconds_from_now(kShutdownS));
  std::optional<Outcome> failed = supervisor.run_until([&] { return supervisor.all_exited(); }, deadline, [&] {
    if (Clock::now() >= job.deadline) return timed_out(job.options);
    return Outcome{1, supervisor.still_running() + " did not shut down within " + seconds_text(kShutdownS) +
                          " after the work finished"};
  });
  return failed ? *failed : Outcome{};
}

}  // namespace dt::dtrun
