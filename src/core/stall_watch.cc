#include "core/stall_watch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <utility>

#include "core/log.h"

namespace dt::core {

namespace {

constexpr size_t kWaitsNamed = 4;  // a line lists this many waits, then a count

// The wall-clock time a steady-clock point was, as "03:12:45 UTC".
std::string wall_time_of(StallWatch::Clock::time_point point, StallWatch::Clock::time_point now) {
  const auto wall = std::chrono::system_clock::now() -
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(now - point);
  const std::time_t t = std::chrono::system_clock::to_time_t(wall);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M:%S UTC", &utc);
  return text;
}

std::string seconds_since(StallWatch::Clock::time_point point, StallWatch::Clock::time_point now) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(now - point).count());
  return text;
}

}  // namespace

std::string rank_set_text(const std::vector<int>& ranks) {
  std::string text = "{";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "}";
}

double StallWatch::period_s(double threshold_s) { return std::max(0.05, std::min(1.0, threshold_s / 10)); }

StallWatch::StallWatch(std::string facility, double threshold_s, Probe probe, Named named)
    : facility_(std::move(facility)), threshold_s_(threshold_s), probe_(std::move(probe)), named_(std::move(named)) {}

StallWatch::~StallWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StallWatch::start() {
  if (threshold_s_ <= 0 || thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void StallWatch::loop() {
  const auto period =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_s(threshold_s_)));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    try {
      check(Clock::now());
    } catch (const std::exception& e) {
      // A probe that cannot look now (its process is ending) looks again later.
      log(LogLevel::kDebug, facility_, std::string("stall inspector: ") + e.what());
    }
    lock.lock();
  }
}

size_t StallWatch::check(Clock::time_point now) {
  if (threshold_s_ <= 0) return 0;
  const std::vector<OpenWait> waits = probe_();
  std::map<std::string, Clock::time_point> seen;
  std::vector<const OpenWait*> late;
  Clock::time_point oldest = now;
  std::set<int> workers;
  const auto threshold = std::chrono::duration<double>(threshold_s_);
  for (const OpenWait& wait : waits) {
    const auto found = first_seen_.find(wait.id);
    const Clock::time_point since =
        found != first_seen_.end()
            ? found->second
            : now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait.waited_s));
    seen.emplace(wait.id, since);
    if (now - since < threshold) continue;
    late.push_back(&wait);
    oldest = std::min(oldest, since);
    workers.insert(wait.waits_for.begin(), wait.waits_for.end());
  }
  first_seen_ = std::move(seen);

  if (late.empty()) {
    if (stalled_) {
      log(LogLevel::kWarning, facility_,
          "stall inspector: resumed after waiting " + seconds_since(stall_since_, now) + " (since " +
              wall_time_of(stall_since_, now) + ")");
      stalled_ = false;
      named_workers_.clear();
      if (named_) named_({});
    }
    return 0;
  }
  std::vector<int> named(workers.begin(), workers.end());
  if (stalled_ && named == named_workers_) return late.size();
  if (!stalled_) stall_since_ = oldest;
  stalled_ = true;
  std::sort(late.begin(), late.end(), [&](const OpenWait* a, const OpenWait* b) {
    return first_seen_.at(a->id) < first_seen_.at(b->id);
  });
  std::string text = "stall inspector: waiting since " + wall_time_of(stall_since_, now) + " (" +
                     seconds_since(stall_since_, now) + ", over DT_STALL_WARNING_S)";
  text += named.empty() ? ", for workers not known here" : " for workers " + rank_set_text(named);
  text += ": ";
  for (size_t i = 0; i < late.size() && i < kWaitsNamed; ++i) text += (i ? "; " : "") + late[i]->what;
  if (late.size() > kWaitsNamed) text += "; and " + std::to_string(late.size() - kWaitsNamed) + " more";
  log(LogLevel::kWarning, facility_, text);
  named_workers_ = std::move(named);
  if (named_) named_(named_workers_);
  return late.size();
}

}  // namespace dt::core
