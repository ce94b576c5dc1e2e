// The stall inspector's watchdog, one per process that waits on others (a
// server's dist_sync rounds, a worker's requests, the scheduler's barriers):
// a companion that looks at the process's waits about once a second and
// logs, once per stall, a warning naming what has waited longer than
// DT_STALL_WARNING_S and, where known, which workers it waits for; and, when
// those waits end, that the process resumed.
//
// It knows nothing of what it watches: a probe lists the waits open now,
// each under an identity that stays the same while nothing moves (a part's
// round, a message in flight). A wait's start is when the watch first saw
// its identity, so it is late by at most one look (the period below). The
// waiting code gets no hook at all.
//
// Threading: one thread of its own (none when the threshold is 0: off),
// sleeping on a condition variable between looks; the destructor stops and
// joins it within one look. The probe runs on that thread and may take the
// waiting code's locks; check() runs one look on the caller's thread (tests).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dt::core {

struct OpenWait {
  std::string id;                 // unchanged while the wait does not move
  std::string what;               // "round 5 of key 3 [0, 100)"
  std::vector<int> waits_for;     // worker ranks, where the process knows them
  // How long it had waited already when first seen (a wait another process
  // reported after its own threshold): the watch counts from then.
  double waited_s = 0;
};

class StallWatch {
 public:
  using Clock = std::chrono::steady_clock;
  using Probe = std::function<std::vector<OpenWait>()>;
  // Called with the workers the current stall names (empty: resumed or
  // none named), on the watch's thread, whenever that set changes.
  using Named = std::function<void(const std::vector<int>& workers)>;

  // facility: the log's ("server 0", "worker 1", "scheduler"); threshold_s:
  // DT_STALL_WARNING_S, 0 for off (no thread, check() does nothing).
  StallWatch(std::string facility, double threshold_s, Probe probe, Named named = {});
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // Starts the thread (a no-op when off); separate from the constructor so
  // that an owner starts it once everything the probe reads exists.
  void start();
  // One look at now: logs a stall's start, a change of the workers it
  // names, or its end. Returns the number of waits past the threshold.
  size_t check(Clock::time_point now);
  // The seconds between looks: 1, or a tenth of a threshold under 10 s
  // (at least 50 ms).
  static double period_s(double threshold_s);

 private:
  void loop();

  const std::string facility_;
  const double threshold_s_;
  const Probe probe_;
  const Named named_;

  std::map<std::string, Clock::time_point> first_seen_;  // the watch thread's (or check()'s caller's)
  bool stalled_ = false;
  Clock::time_point stall_since_;
  std::vector<int> named_workers_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// "{1, 3}".
std::string rank_set_text(const std::vector<int>& ranks);

}  // namespace dt::core
