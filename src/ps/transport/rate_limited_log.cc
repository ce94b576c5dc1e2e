#include "ps/transport/rate_limited_log.h"

#include <cstdio>

namespace dt::ps {

RateLimitedLog::RateLimitedLog(std::string prefix, size_t burst, double window_s)
    : prefix_(std::move(prefix)),
      burst_(burst),
      window_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(window_s))),
      window_start_(Clock::now()) {}

void RateLimitedLog::print(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point now = Clock::now();
  if (now - window_start_ >= window_) {
    // The count of what the last window left out comes before the next line,
    // so a reader of the log knows how much was not shown.
    if (suppressed_in_window_ > 0) {
      std::fprintf(stderr, "%s: %zu more such lines not shown\n", prefix_.c_str(), suppressed_in_window_);
    }
    window_start_ = now;
    printed_in_window_ = 0;
    suppressed_in_window_ = 0;
  }
  if (printed_in_window_ >= burst_) {
    ++suppressed_in_window_;
    ++suppressed_total_;
    return;
  }
  ++printed_in_window_;
  std::fprintf(stderr, "%s: %s\n", prefix_.c_str(), line.c_str());
}

size_t RateLimitedLog::suppressed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return suppressed_total_;
}

}  // namespace dt::ps
