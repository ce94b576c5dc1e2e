// One line of a process's status file (DT_STATUS_FILE, status_file.h), as
// a trainer or a server writes it and dtrun reads it back for its live job
// summary (dtrun compiles this file too: it depends on nothing but the
// standard library and core/traffic.h).
//
// A worker's (train/trainer_status.h):
//   steps=12 images=768 bytes_sent=... bytes_received=... compute_s=1.250
//   exchange_s=0.310 wall_s=2.004
// compute_s: forward and backward; exchange_s: the rest of train_batch
// (communication, the update, and waiting for the other workers' pushes);
// wall_s: since the first batch began.
//
// A server's (ps/server/server_status_file.h):
//   requests=480 bytes_sent=... bytes_received=... compute_s=0.120
//   communicate_s=0.410 waiting_s=1.470 wall_s=2.000
// compute_s: summing pushes, the optimizer's update, compressing a round's
// sum; communicate_s: the rest of handling requests; waiting_s: no request
// in hand; the three split wall_s, the time since its first request
// (ps/server/work_clock.h).
#pragma once

#include <cstdint>
#include <string>

#include "core/traffic.h"

namespace dt::core {

struct WorkerStatus {
  int64_t steps = 0;
  int64_t images = 0;
  Traffic traffic;
  double compute_s = 0;
  double exchange_s = 0;
  double wall_s = 0;
};

struct ServerStatus {
  int64_t requests = 0;
  Traffic traffic;  // what the server's transport moved
  double compute_s = 0;
  double communicate_s = 0;
  double waiting_s = 0;
  double wall_s = 0;
};

// The line, without a newline.
std::string format_status(const WorkerStatus& numbers);
std::string format_status(const ServerStatus& numbers);
// Reads a line back; false (numbers untouched) for one that is not one of
// that kind. Words it does not know are skipped (a later writer's).
bool parse_status(const std::string& line, WorkerStatus& numbers);
bool parse_status(const std::string& line, ServerStatus& numbers);

// The status file's name in dtrun's folder for a process ("worker", 0 ->
// "worker-0.status"): dtrun reads it, and the scheduler writes it when it
// relays the numbers of processes on other hosts (ps/scheduler/status_relay.h).
std::string status_file_name(const std::string& role, int rank);

}  // namespace dt::core
