#include "ps/transport/rate_limited_log.h"

#include "core/log.h"

namespace dt::ps {

namespace {

// "disttrain scheduler" (the prefix callers once printed) names the
// facility "scheduler"; the channel adds "disttrain " itself.
std::string facility_of(const std::string& name) {
  const std::string kLibrary = "disttrain ";
  return name.compare(0, kLibrary.size(), kLibrary) == 0 ? name.substr(kLibrary.size()) : name;
}

}  // namespace

RateLimitedLog::RateLimitedLog(const std::string& facility, size_t burst, double window_s)
    : facility_(facility_of(facility)),
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
      core::log(core::LogLevel::kInfo, facility_, std::to_string(suppressed_in_window_) + " more such lines not shown");
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
  core::log(core::LogLevel::kInfo, facility_, line);
}

size_t RateLimitedLog::suppressed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return suppressed_total_;
}

}  // namespace dt::ps
