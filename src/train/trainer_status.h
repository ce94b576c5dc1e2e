// The trainer's side of dtrun's live job summary (dtrun --status-every):
// what the trainer has done so far, counted per batch and written to its
// status file (DT_STATUS_FILE, core/status_file.h) as a worker's status
// line (core/status_line.h) when DT_STATUS_EVERY_S has passed, and once
// more when the trainer ends.
//
// Threading: the trainer's (one call at a time).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "core/status_file.h"
#include "core/status_line.h"
#include "core/traffic.h"

namespace dt::train {

class TrainerStatus {
 public:
  // Null unless DT_STATUS_FILE is set (core::StatusFile::from_environment).
  static std::unique_ptr<TrainerStatus> from_environment();
  explicit TrainerStatus(std::unique_ptr<core::StatusFile> file);
  // Writes the last numbers, whatever the interval.
  ~TrainerStatus();

  // A batch of images finished: compute_s and exchange_s its two parts,
  // traffic the store's since it was made. Rewrites the file when due.
  void batch_done(int64_t images, double compute_s, double exchange_s, const core::Traffic& traffic);

 private:
  std::unique_ptr<core::StatusFile> file_;
  core::WorkerStatus numbers_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace dt::train
