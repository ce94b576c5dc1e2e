#include "ps/server/work_clock.h"

#include <algorithm>

namespace dt::ps {

namespace {

double seconds(WorkClock::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void WorkClock::count_until(Clock::time_point now) {
  if (!started_) {
    started_ = true;
    last_ = now;
    return;
  }
  now = std::max(now, last_);
  const Clock::duration since = now - last_;
  (computing_ > 0 ? compute_ : handling_ > 0 ? communicate_ : waiting_) += since;
  last_ = now;
}

void WorkClock::enter(Activity activity, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  count_until(now);
  if (activity == Activity::kComputing) {
    ++computing_;
  } else {
    ++handling_;
    ++requests_;
  }
}

void WorkClock::leave(Activity activity, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  count_until(now);
  --(activity == Activity::kComputing ? computing_ : handling_);
}

WorkClock::Split WorkClock::split(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Split split;
  if (!started_) return split;
  Clock::duration compute = compute_;
  Clock::duration communicate = communicate_;
  Clock::duration waiting = waiting_;
  (computing_ > 0 ? compute : handling_ > 0 ? communicate : waiting) += std::max(now, last_) - last_;
  split.requests = requests_;
  split.compute_s = seconds(compute);
  split.communicate_s = seconds(communicate);
  split.waiting_s = seconds(waiting);
  split.wall_s = seconds(compute + communicate + waiting);
  return split;
}

}  // namespace dt::ps
