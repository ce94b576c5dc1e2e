// One line of a trainer's status file (DT_STATUS_FILE, status_file.h), as
// the trainer writes it and dtrun reads it back (dtrun compiles this file
// too: it depends on nothing but the standard library and core/traffic.h).
//   steps=12 images=768 bytes_sent=... bytes_received=... compute_s=1.250
//   exchange_s=0.310 wall_s=2.004
// compute_s: forward and backward; exchange_s: the rest of train_batch
// (communication, the update, and waiting for the other workers' pushes);
// wall_s: since the first batch began.
#pragma once

#include <cstdint>
#include <string>

#include "core/traffic.h"

namespace dt::train {

struct StatusNumbers {
  int64_t steps = 0;
  int64_t images = 0;
  core::Traffic traffic;
  double compute_s = 0;
  double exchange_s = 0;
  double wall_s = 0;
};

// The line, without a newline.
std::string format_status(const StatusNumbers& numbers);
// Reads a line back; false (numbers untouched) for one that is not one.
// Words it does not know are skipped (a later writer's).
bool parse_status(const std::string& line, StatusNumbers& numbers);

}  // namespace dt::train
