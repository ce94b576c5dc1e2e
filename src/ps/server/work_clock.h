// Where a server's wall time goes, for dtrun's live job summary
// (server_status_file.h): computing (summing pushes, the optimizer's
// update, compressing a round's sum), communicating (the rest of handling
// a request: checking and decoding it, answering it and the pulls it
// completes), or waiting (no request in hand: idle between requests, or a
// dist_sync round held open until the missing workers push).
//
// The server handles requests on several threads at once, and a moment is
// counted once: as computing when any thread computes, else as
// communicating when any handles a request, else as waiting. So the three
// add up to the wall time since the first request, and "busy" (computing
// or communicating) is the share of it the server was not idle.
//
// The server's code takes a null clock as "off" (no DT_STATUS_FILE): a
// Section then does nothing, not even read the clock. On, a Section reads
// the clock twice and takes a mutex twice (a leaf: nothing is called under
// it); no allocation.
//
// Threading: any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace dt::ps {

class WorkClock {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Activity { kHandling, kComputing };

  // What the clock counted up to a moment, in seconds (all 0 before the
  // first Section).
  struct Split {
    int64_t requests = 0;  // handling Sections begun
    double compute_s = 0;
    double communicate_s = 0;
    double waiting_s = 0;
    double wall_s = 0;  // the three together
  };

  // A scope of work on the calling thread: handling a request (begun: one
  // more request) or, inside one or not, computing.
  class Section {
   public:
    Section(WorkClock* clock, Activity activity) : clock_(clock), activity_(activity) {
      if (clock_ != nullptr) clock_->enter(activity_, Clock::now());
    }
    ~Section() {
      if (clock_ != nullptr) clock_->leave(activity_, Clock::now());
    }
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;

   private:
    WorkClock* const clock_;
    const Activity activity_;
  };

  // What Sections do, at the moments given (tests give their own). A
  // moment before the last one counted (two threads that read the clock
  // in one order and got here in the other) counts as that one.
  void enter(Activity activity, Clock::time_point now);
  void leave(Activity activity, Clock::time_point now);

  Split split(Clock::time_point now = Clock::now()) const;

 private:
  // The time since the last change, to what the server was doing then.
  void count_until(Clock::time_point now);

  mutable std::mutex mutex_;
  bool started_ = false;
  Clock::time_point last_;  // the last change counted
  int handling_ = 0;
  int computing_ = 0;
  int64_t requests_ = 0;
  Clock::duration compute_{};
  Clock::duration communicate_{};
  Clock::duration waiting_{};
};

}  // namespace dt::ps
