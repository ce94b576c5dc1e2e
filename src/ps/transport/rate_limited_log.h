// A log (core/log.h, at info) that a peer cannot flood: at most `burst`
// lines per window, then one line saying how many were left out. A server that rejects 60,000
// forged messages prints a few lines a second, not 60,000, and the lines it
// prints still name the first offenders.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace dt::ps {

class RateLimitedLog {
 public:
  // facility: who speaks ("scheduler"; the older "disttrain scheduler"
  // form names the same); window: seconds.
  explicit RateLimitedLog(const std::string& facility, size_t burst = 10, double window_s = 10.0);
  RateLimitedLog(const RateLimitedLog&) = delete;
  RateLimitedLog& operator=(const RateLimitedLog&) = delete;

  // Logs line unless this window's burst is spent. Thread-safe.
  void print(const std::string& line);
  // Lines left out so far (for tests and the closing summary).
  size_t suppressed() const;

 private:
  using Clock = std::chrono::steady_clock;
  const std::string facility_;
  const size_t burst_;
  const Clock::duration window_;
  mutable std::mutex mutex_;
  Clock::time_point window_start_;
  size_t printed_in_window_ = 0;
  size_t suppressed_in_window_ = 0;
  size_t suppressed_total_ = 0;
};

}  // namespace dt::ps
