#include "ps/scheduler/status_relay.h"

#include <cmath>

#include "core/log.h"
#include "core/parameter_table.h"
#include "core/status_file.h"

namespace dt::ps {

namespace {

constexpr double kMostSeconds = 100 * 365.25 * 24 * 3600;  // a century
constexpr uint64_t kMostBytes = uint64_t{1} << 62;

// Appends to why when value is not a sane count of its kind.
void check_count(const char* name, int64_t value, std::string& why) {
  if (value < 0) why += std::string(why.empty() ? "" : ", ") + name + " " + std::to_string(value) + " below 0";
}

void check_bytes(const char* name, uint64_t value, std::string& why) {
  if (value > kMostBytes) why += std::string(why.empty() ? "" : ", ") + name + " " + std::to_string(value) + " above 2^62";
}

void check_seconds(const char* name, double value, std::string& why) {
  if (!std::isfinite(value) || value < 0 || value > kMostSeconds) {
    why += std::string(why.empty() ? "" : ", ") + name + " " + std::to_string(value) + " s not in [0, a century]";
  }
}

}  // namespace

std::optional<core::WorkerStatus> read_report(const wire::WorkerStatusReport& r, std::string& why) {
  why.clear();
  check_count("steps", r.steps(), why);
  check_count("images", r.images(), why);
  check_bytes("bytes_sent", r.bytes_sent(), why);
  check_bytes("bytes_received", r.bytes_received(), why);
  check_seconds("compute_s", r.compute_s(), why);
  check_seconds("exchange_s", r.exchange_s(), why);
  check_seconds("wall_s", r.wall_s(), why);
  if (!why.empty()) return std::nullopt;
  core::WorkerStatus n;
  n.steps = r.steps();
  n.images = r.images();
  n.traffic.bytes_sent = r.bytes_sent();
  n.traffic.bytes_received = r.bytes_received();
  n.compute_s = r.compute_s();
  n.exchange_s = r.exchange_s();
  n.wall_s = r.wall_s();
  return n;
}

std::optional<core::ServerStatus> read_report(const wire::ServerStatusReport& r, std::string& why) {
  why.clear();
  check_count("requests", r.requests(), why);
  check_bytes("bytes_sent", r.bytes_sent(), why);
  check_bytes("bytes_received", r.bytes_received(), why);
  check_seconds("compute_s", r.compute_s(), why);
  check_seconds("communicate_s", r.communicate_s(), why);
  check_seconds("waiting_s", r.waiting_s(), why);
  check_seconds("wall_s", r.wall_s(), why);
  if (!why.empty()) return std::nullopt;
  core::ServerStatus n;
  n.requests = r.requests();
  n.traffic.bytes_sent = r.bytes_sent();
  n.traffic.bytes_received = r.bytes_received();
  n.compute_s = r.compute_s();
  n.communicate_s = r.communicate_s();
  n.waiting_s = r.waiting_s();
  n.wall_s = r.wall_s();
  return n;
}

std::unique_ptr<StatusRelay> StatusRelay::from_environment() {
  const char* dir = core::read_parameter("DT_STATUS_DIR");
  if (dir == nullptr || *dir == '\0') return nullptr;
  return std::make_unique<StatusRelay>(dir);
}

bool StatusRelay::take(Role role, int rank, const wire::Heartbeat& heartbeat) {
  const wire::WorkerStatusReport* worker = heartbeat.worker_status();
  const wire::ServerStatusReport* server = heartbeat.server_status();
  if (worker == nullptr && server == nullptr) return true;
  std::string why;
  std::string line;
  if (role == Role::kWorker ? server != nullptr : worker != nullptr) {
    why = std::string("a ") + (role == Role::kWorker ? "server's" : "worker's") + " report";
  } else if (worker != nullptr) {
    if (std::optional<core::WorkerStatus> n = read_report(*worker, why)) line = core::format_status(*n);
  } else if (std::optional<core::ServerStatus> n = read_report(*server, why)) {
    line = core::format_status(*n);
  }
  if (line.empty()) {
    drop(role, rank, why);
    return false;
  }
  core::StatusFile(dir_ + "/" + core::status_file_name(role_name(role), rank), 1, "scheduler").write(line);
  return true;
}

void StatusRelay::drop(Role role, int rank, const std::string& why) {
  if (!named_.insert({role, rank}).second) return;
  core::log(core::LogLevel::kWarning, "disttrain scheduler",
            std::string("dropped the status report of ") + role_name(role) + " " + std::to_string(rank) + " (" + why +
                "); later bad ones of it are dropped silently");
}

}  // namespace dt::ps
