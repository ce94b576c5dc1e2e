#include "job_status.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <cstdio>
#include <fstream>

#include "line_prefixer.h"

namespace dt::dtrun {

namespace {

constexpr double kTerminalDefaultS = 10;

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string rate_text(double bytes_per_s) {
  if (bytes_per_s >= 1e6) return fixed(bytes_per_s / 1e6, 2) + " MB/s";
  if (bytes_per_s >= 1e3) return fixed(bytes_per_s / 1e3, 1) + " kB/s";
  return fixed(bytes_per_s, 0) + " B/s";
}

double megabytes(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

void print(const std::string& text) { write_all(STDOUT_FILENO, text.data(), text.size()); }

// The line's part for the workers: "worker 0 step 20 160.0 img/s, ...;
// slowest worker 1, 8 steps behind"; adds their bytes over the interval
// to in and out.
std::string workers_text(const std::vector<core::WorkerStatus>& now, const std::vector<core::WorkerStatus>& previous,
                         double interval_s, double& in, double& out) {
  std::string text;
  int slowest = -1;
  int64_t most = 0;
  for (size_t w = 0; w < now.size(); ++w) {
    const core::WorkerStatus& n = now[w];
    const core::WorkerStatus before = w < previous.size() ? previous[w] : core::WorkerStatus{};
    text += (w ? ", worker " : " worker ") + std::to_string(w);
    if (n.steps == 0) {
      text += " no step yet";
    } else {
      // A restarted worker's counts start over: its rate is from the new ones.
      const bool restarted = n.images < before.images;
      const double images = static_cast<double>(restarted ? n.images : n.images - before.images);
      text += " step " + std::to_string(n.steps) + " " + fixed(images / interval_s, 1) + " img/s";
      if (!restarted) {
        in += static_cast<double>(n.traffic.bytes_received - before.traffic.bytes_received);
        out += static_cast<double>(n.traffic.bytes_sent - before.traffic.bytes_sent);
      }
    }
    most = std::max(most, n.steps);
    if (slowest < 0 || n.steps < now[static_cast<size_t>(slowest)].steps) slowest = static_cast<int>(w);
  }
  if (slowest >= 0 && now.size() > 1) {
    text += "; slowest worker " + std::to_string(slowest) + ", " +
            std::to_string(most - now[static_cast<size_t>(slowest)].steps) + " steps behind";
  }
  return text;
}

// The line's part for the servers: "; server 0 250.0 req/s 40% busy, ...",
// busy being the share of the time between the two files' writes that the
// server computed or communicated.
std::string servers_text(const std::vector<core::ServerStatus>& now, const std::vector<core::ServerStatus>& previous,
                         double interval_s) {
  std::string text;
  for (size_t s = 0; s < now.size(); ++s) {
    const core::ServerStatus& n = now[s];
    core::ServerStatus before = s < previous.size() ? previous[s] : core::ServerStatus{};
    // A server started again in place counts from its own start.
    if (n.requests < before.requests || n.wall_s < before.wall_s) before = core::ServerStatus{};
    text += (s ? ", server " : "; server ") + std::to_string(s);
    if (n.requests == 0) {
      text += " no request yet";
      continue;
    }
    const double wall = n.wall_s - before.wall_s;
    const double busy = (n.compute_s + n.communicate_s) - (before.compute_s + before.communicate_s);
    text += " " + fixed(static_cast<double>(n.requests - before.requests) / interval_s, 1) + " req/s " +
            fixed(wall > 0 ? std::min(100.0, std::max(0.0, 100 * busy / wall)) : 0, 0) + "% busy";
  }
  return text;
}

}  // namespace

double status_interval(double option_s, bool stdout_is_terminal) {
  if (option_s >= 0) return option_s;
  return stdout_is_terminal ? kTerminalDefaultS : 0;
}

JobStatus JobStatus::for_job(const JobContext& job) {
  const double every_s = status_interval(job.options.status_every_s, isatty(STDOUT_FILENO) == 1);
  const std::string dir = job.work_dir + "/status";
  // A folder already there (a restarted job's) is reused; the files are
  // rewritten by the new run's workers.
  if (every_s > 0 && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot make the status folder " + dir + ": " + std::strerror(errno));
  }
  return JobStatus(dir, job.options.num_workers, job.options.num_servers, every_s, job.restart_count,
                   job.options.launcher != Launcher::kLocal);
}

JobStatus::JobStatus(std::string dir, int num_workers, int num_servers, double every_s, int restarts_before,
                     bool relayed)
    : dir_(std::move(dir)),
      num_workers_(num_workers),
      num_servers_(num_servers),
      every_s_(every_s),
      restarts_before_(restarts_before),
      relayed_(relayed) {}

std::string JobStatus::file_of(Role role, int rank) const {
  return dir_ + "/" + core::status_file_name(role_name(role), rank);
}

void JobStatus::add_environment(Role role, int rank, EnvMap& env) const {
  // The scheduler handles no data: its time is the job's, spent waiting.
  if (!on() || role == Role::kScheduler) return;
  // The processes write a little more often than dtrun prints, so that each
  // line finds numbers at most half an interval old. Relayed, the
  // heartbeats set the pace and this only turns the reports on.
  env["DT_STATUS_EVERY_S"] = fixed(std::max(0.1, every_s_ / 2), 3);
  if (!relayed_) env["DT_STATUS_FILE"] = file_of(role, rank);
}

EnvMap JobStatus::scheduler_environment() const {
  if (!on() || !relayed_) return {};
  return {{"DT_STATUS_DIR", dir_}};
}

namespace {

// The first line of file, into numbers (left as they are when there is
// none, or it is not one).
template <typename Numbers>
void read_file(const std::string& file, Numbers& numbers) {
  std::ifstream in(file);
  std::string text;
  if (in && std::getline(in, text)) core::parse_status(text, numbers);
}

}  // namespace

JobNumbers JobStatus::read_all() const {
  JobNumbers all;
  all.workers.resize(static_cast<size_t>(num_workers_));
  all.servers.resize(static_cast<size_t>(num_servers_));
  for (int w = 0; w < num_workers_; ++w) read_file(file_of(Role::kWorker, w), all.workers[static_cast<size_t>(w)]);
  for (int s = 0; s < num_servers_; ++s) read_file(file_of(Role::kServer, s), all.servers[static_cast<size_t>(s)]);
  return all;
}

void JobStatus::tick(const Supervisor& supervisor) {
  if (!on()) return;
  const auto now = std::chrono::steady_clock::now();
  const double interval_s = std::chrono::duration<double>(now - printed_).count();
  if (interval_s < every_s_) return;
  printed_ = now;
  const JobNumbers numbers = read_all();
  const int restarts = restarts_before_ + supervisor.restarts();
  const int losses = static_cast<int>(supervisor.lost_workers().size() + supervisor.lost_servers().size());
  const double elapsed_s = std::chrono::duration<double>(now - started_).count();
  print(line(elapsed_s, numbers, previous_, interval_s, restarts, losses) + "\n");
  previous_ = numbers;
}

std::string JobStatus::line(double elapsed_s, const JobNumbers& now, const JobNumbers& previous, double interval_s,
                            int restarts, int losses) {
  double in = 0;
  double out = 0;
  std::string text = "dtrun status at " + fixed(elapsed_s, 0) + " s:";
  text += workers_text(now.workers, previous.workers, interval_s, in, out);
  text += servers_text(now.servers, previous.servers, interval_s);
  text += "; in " + rate_text(in / interval_s) + ", out " + rate_text(out / interval_s);
  text += "; restarts " + std::to_string(restarts) + ", losses " + std::to_string(losses);
  return text;
}

namespace {

// One row of the table: a process's count (steps or requests; 0: none
// yet, said as nothing), its images ("-" for a server) and its numbers.
struct TableRow {
  std::string name;
  int64_t count;
  const char* none;
  std::string images;
  double compute_s, communicate_s, waiting_s, wall_s;
  core::Traffic traffic;
};

std::string table_row(const TableRow& r) {
  char row[256];
  if (r.count == 0) {
    std::snprintf(row, sizeof row, "%-10s %10s\n", r.name.c_str(), r.none);
  } else {
    std::snprintf(row, sizeof row, "%-10s %10lld %10s %10.3f %14.3f %9.3f %9.3f %12.3f %12.3f\n", r.name.c_str(),
                  static_cast<long long>(r.count), r.images.c_str(), r.compute_s, r.communicate_s, r.waiting_s,
                  r.wall_s, megabytes(r.traffic.bytes_sent), megabytes(r.traffic.bytes_received));
  }
  return row;
}

}  // namespace

std::string JobStatus::table(const JobNumbers& numbers) {
  double least_exchange = -1;
  for (const core::WorkerStatus& n : numbers.workers) {
    if (n.steps > 0 && (least_exchange < 0 || n.exchange_s < least_exchange)) least_exchange = n.exchange_s;
  }
  const bool served = std::any_of(numbers.servers.begin(), numbers.servers.end(),
                                  [](const core::ServerStatus& n) { return n.requests > 0; });
  if (least_exchange < 0 && !served) return "";
  char header[256];
  std::snprintf(header, sizeof header, "%-10s %10s %10s %10s %14s %9s %9s %12s %12s\n", "process", "steps/reqs",
                "images", "compute_s", "communicate_s", "waiting_s", "wall_s", "sent_MB", "received_MB");
  std::string text = "dtrun summary per process (workers' waiting_s estimated, servers' measured; docs/profiling.md)\n";
  text += header;
  for (size_t w = 0; w < numbers.workers.size(); ++w) {
    const core::WorkerStatus& n = numbers.workers[w];
    text += table_row({"worker " + std::to_string(w), n.steps, "no step", std::to_string(n.images), n.compute_s,
                       least_exchange, n.exchange_s - least_exchange, n.wall_s, n.traffic});
  }
  for (size_t s = 0; s < numbers.servers.size(); ++s) {
    const core::ServerStatus& n = numbers.servers[s];
    text += table_row({"server " + std::to_string(s), n.requests, "no request", "-", n.compute_s, n.communicate_s,
                       n.waiting_s, n.wall_s, n.traffic});
  }
  return text;
}

void JobStatus::print_table() {
  if (!on()) return;
  const std::string text = table(read_all());
  if (!text.empty()) print(text);
}

}  // namespace dt::dtrun
