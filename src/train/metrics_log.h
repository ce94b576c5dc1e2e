// The JSON-lines metrics log: one object per epoch, flushed as it is written
// so that a crashed or killed run keeps every finished epoch.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace dt::train {

struct EpochRecord {
  int epoch = 0;  // 1-based: the number of epochs completed
  double loss = 0.0;
  double train_accuracy = 0.0;
  double test_accuracy = -1.0;  // < 0: no test set
  double images_per_s = 0.0;
  double seconds = 0.0;
  double compute_fraction = 0.0;  // share of the epoch in forward/backward
  // What this process's kvstore moved over the network during the epoch
  // (0 without one, or with an in-process store).
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

class MetricsLog {
 public:
  // append: keep earlier lines (a resumed run); else start the file anew.
  // Error(kIo) naming the path when it cannot be opened.
  MetricsLog(const std::string& path, bool append);
  void write(const EpochRecord& record);

 private:
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
};

}  // namespace dt::train
