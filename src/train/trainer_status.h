// The trainer's side of dtrun's live job summary (dtrun --status-every):
// what the trainer has done so far, counted per batch and written to its
// status file (DT_STATUS_FILE, core/status_file.h) as a worker's status
// line (core/status_line.h) when DT_STATUS_EVERY_S has passed, and once
// more when the trainer ends. When dtrun runs the trainer on another host
// (DT_STATUS_EVERY_S without DT_STATUS_FILE), the numbers go to the store
// instead after every batch (kvstore::KVStore::report_status), which sends
// them to the scheduler with its heartbeats, and the scheduler writes the
// file in dtrun's folder.
//
// Threading: the trainer's (one call at a time).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/status_file.h"
#include "core/status_line.h"
#include "core/traffic.h"
#include "kvstore/kvstore.h"

namespace dt::train {

class TrainerStatus {
 public:
  // Where the numbers go when relayed; the store must outlive this.
  using Relay = std::function<void(const core::WorkerStatus&)>;

  // Null unless DT_STATUS_FILE or DT_STATUS_EVERY_S is set
  // (core::StatusFile); store: the trainer's (may be null: nothing is
  // relayed then).
  static std::unique_ptr<TrainerStatus> from_environment(kvstore::KVStore* store);
  // Exactly one of file and relay.
  TrainerStatus(std::unique_ptr<core::StatusFile> file, Relay relay);
  // Writes the last numbers, whatever the interval.
  ~TrainerStatus();

  // A batch of images finished: compute_s and exchange_s its two parts,
  // traffic the store's since it was made. Rewrites the file when due.
  void batch_done(int64_t images, double compute_s, double exchange_s, const core::Traffic& traffic);

 private:
  std::unique_ptr<core::StatusFile> file_;
  const Relay relay_;
  core::WorkerStatus numbers_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace dt::train
