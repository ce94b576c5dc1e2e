#include "train/progress.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace dt::train {

Progress::Progress(ProgressMode mode)
    : bar_(mode == ProgressMode::kBar || (mode == ProgressMode::kAuto && ::isatty(STDOUT_FILENO) == 1)),
      silent_(mode == ProgressMode::kSilent) {}

void Progress::batch(int epoch, int64_t done, int64_t total, double loss, double accuracy, double images_per_s) {
  if (silent_ || !bar_ || total <= 0) return;
  // Redraw only when the bar moves a percent, not on every one of ~1000 batches.
  const int64_t percent = done * 100 / total;
  if (percent == last_percent_ && done != total) return;
  last_percent_ = percent;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(done * kWidth / total);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::printf("\repoch %d [%s] %lld/%lld loss %.4f acc %.4f %.0f img/s", epoch + 1, bar.c_str(),
              static_cast<long long>(done), static_cast<long long>(total), loss, accuracy, images_per_s);
  std::fflush(stdout);
}

void Progress::epoch_end(const EpochRecord& r, int total_epochs) {
  last_percent_ = -1;
  if (silent_) return;
  if (bar_) std::printf("\r\033[K");
  std::printf("epoch %d/%d: loss %.4f train_accuracy %.4f", r.epoch, total_epochs, r.loss, r.train_accuracy);
  if (r.test_accuracy >= 0) std::printf(" test_accuracy %.4f", r.test_accuracy);
  std::printf(" %.0f img/s %.1f s", r.images_per_s, r.seconds);
  if (r.bytes_sent + r.bytes_received > 0) {
    std::printf(" sent %.1f MB received %.1f MB", static_cast<double>(r.bytes_sent) / 1e6,
                static_cast<double>(r.bytes_received) / 1e6);
  }
  std::printf("\n");
  std::fflush(stdout);
}

void Progress::resumed(int epochs_done, int total_epochs, const std::string& directory) {
  if (silent_) return;
  std::printf("resuming after epoch %d/%d from checkpoint directory %s\n", epochs_done, total_epochs,
              directory.c_str());
  std::fflush(stdout);
}

}  // namespace dt::train
