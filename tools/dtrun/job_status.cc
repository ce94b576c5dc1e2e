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

void print(const std::string& text) { write_all(STDOUT_FILENO, text.data(), text.size()); }

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
  return JobStatus(dir, job.options.num_workers, every_s, job.restart_count);
}

JobStatus::JobStatus(std::string dir, int num_workers, double every_s, int restarts_before)
    : dir_(std::move(dir)), num_workers_(num_workers), every_s_(every_s), restarts_before_(restarts_before) {}

std::string JobStatus::file_of(int rank) const { return dir_ + "/worker-" + std::to_string(rank) + ".status"; }

void JobStatus::add_environment(int rank, EnvMap& env) const {
  if (!on()) return;
  env["DT_STATUS_FILE"] = file_of(rank);
  // The trainers write a little more often than dtrun prints, so that each
  // line finds numbers at most half an interval old.
  env["DT_STATUS_EVERY_S"] = fixed(std::max(0.1, every_s_ / 2), 3);
}

std::vector<train::StatusNumbers> JobStatus::read_all() const {
  std::vector<train::StatusNumbers> all(static_cast<size_t>(num_workers_));
  for (int w = 0; w < num_workers_; ++w) {
    std::ifstream in(file_of(w));
    std::string text;
    if (in && std::getline(in, text)) train::parse_status(text, all[static_cast<size_t>(w)]);
  }
  return all;
}

void JobStatus::tick(const Supervisor& supervisor) {
  if (!on()) return;
  const auto now = std::chrono::steady_clock::now();
  const double interval_s = std::chrono::duration<double>(now - printed_).count();
  if (interval_s < every_s_) return;
  printed_ = now;
  const std::vector<train::StatusNumbers> numbers = read_all();
  const int restarts = restarts_before_ + supervisor.restarts();
  const int losses = static_cast<int>(supervisor.lost_workers().size() + supervisor.lost_servers().size());
  const double elapsed_s = std::chrono::duration<double>(now - started_).count();
  print(line(elapsed_s, numbers, previous_, interval_s, restarts, losses) + "\n");
  previous_ = numbers;
}

std::string JobStatus::line(double elapsed_s, const std::vector<train::StatusNumbers>& now,
                            const std::vector<train::StatusNumbers>& previous, double interval_s, int restarts,
                            int losses) {
  std::string text = "dtrun status at " + fixed(elapsed_s, 0) + " s:";
  double in = 0;
  double out = 0;
  int slowest = -1;
  int64_t most = 0;
  for (size_t w = 0; w < now.size(); ++w) {
    const train::StatusNumbers& n = now[w];
    const train::StatusNumbers before = w < previous.size() ? previous[w] : train::StatusNumbers{};
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
  text += "; in " + rate_text(in / interval_s) + ", out " + rate_text(out / interval_s);
  text += "; restarts " + std::to_string(restarts) + ", losses " + std::to_string(losses);
  return text;
}

std::string JobStatus::table(const std::vector<train::StatusNumbers>& numbers) {
  double least_exchange = -1;
  for (const train::StatusNumbers& n : numbers) {
    if (n.steps > 0 && (least_exchange < 0 || n.exchange_s < least_exchange)) least_exchange = n.exchange_s;
  }
  if (least_exchange < 0) return "";
  char row[256];
  std::snprintf(row, sizeof row, "%-10s %8s %10s %10s %14s %9s %12s %12s\n", "process", "steps", "images",
                "compute_s", "communicate_s", "waiting_s", "sent_MB", "received_MB");
  std::string text = "dtrun summary per process (waiting_s: estimated, docs/profiling.md)\n";
  text += row;
  for (size_t w = 0; w < numbers.size(); ++w) {
    const train::StatusNumbers& n = numbers[w];
    const std::string name = "worker " + std::to_string(w);
    if (n.steps == 0) {
      std::snprintf(row, sizeof row, "%-10s %8s\n", name.c_str(), "no step");
    } else {
      std::snprintf(row, sizeof row, "%-10s %8lld %10lld %10.3f %14.3f %9.3f %12.3f %12.3f\n", name.c_str(),
                    static_cast<long long>(n.steps), static_cast<long long>(n.images), n.compute_s, least_exchange,
                    n.exchange_s - least_exchange, static_cast<double>(n.traffic.bytes_sent) / 1e6,
                    static_cast<double>(n.traffic.bytes_received) / 1e6);
    }
    text += row;
  }
  return text;
}

void JobStatus::print_table() {
  if (!on()) return;
  const std::string text = table(read_all());
  if (!text.empty()) print(text);
}

}  // namespace dt::dtrun
