// Per-batch progress and per-epoch summaries on stdout: a bar redrawn in
// place on a terminal, plain lines when the output goes to a file or a pipe
// (so logs of launched jobs stay readable).
#pragma once

#include <cstdint>
#include <string>

#include "train/metrics_log.h"

namespace dt::train {

enum class ProgressMode { kAuto = -1, kPlain = 0, kBar = 1, kSilent = 2 };

class Progress {
 public:
  explicit Progress(ProgressMode mode);
  // After each batch of the epoch (0-based epoch shown 1-based).
  void batch(int epoch, int64_t done, int64_t total, double loss, double accuracy, double images_per_s);
  void epoch_end(const EpochRecord& record, int total_epochs);
  // Before the first batch, when fit goes on from a checkpoint directory.
  void resumed(int epochs_done, int total_epochs, const std::string& directory);

 private:
  bool bar_;
  bool silent_;
  int64_t last_percent_ = -1;
};

}  // namespace dt::train
