// The trainer's side of dtrun's live job summary (dtrun --status-every): a
// small file (DT_STATUS_FILE, which dtrun sets per worker) rewritten every
// DT_STATUS_EVERY_S seconds with what the trainer has done so far, which
// dtrun reads and sums into one line per interval and a table at the end.
//
// The file is one status line (status_line.h), replaced atomically (written
// beside it, then renamed), so a reader never sees half of it.
//
// Threading: the trainer's (one call at a time).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/traffic.h"
#include "train/status_line.h"

namespace dt::train {

class StatusFile {
 public:
  // Null unless DT_STATUS_FILE is set; every_s from DT_STATUS_EVERY_S (1 when
  // unset). Error(kInvalidArgument) for a malformed DT_STATUS_EVERY_S.
  static std::unique_ptr<StatusFile> from_environment();
  StatusFile(std::string path, double every_s);
  // Writes the last numbers, whatever the interval.
  ~StatusFile();

  // A batch of images finished: compute_s and exchange_s its two parts,
  // traffic the store's since it was made. Rewrites the file when due.
  void batch_done(int64_t images, double compute_s, double exchange_s, const core::Traffic& traffic);

 private:
  void write() const;

  const std::string path_;
  const std::chrono::steady_clock::duration every_;
  StatusNumbers numbers_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point written_;
};

}  // namespace dt::train
