#include "ps/scheduler/scheduler_stalls.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <utility>

namespace dt::ps {

namespace {

std::string reporter_name(const std::pair<int, int>& reporter) {
  return (reporter.first == static_cast<int>(Role::kServer) ? "server " : "worker ") + std::to_string(reporter.second);
}

}  // namespace

void SchedulerStalls::heard(const Member& m, const wire::Heartbeat& h) {
  if (m.info.role != Role::kServer && m.info.role != Role::kWorker) return;
  std::vector<int> workers;
  if (h.stalled_on() != nullptr) {
    // Only the job's workers, once each: what a report says is passed on to
    // every node, so nothing else is.
    for (const int rank : *h.stalled_on()) {
      const bool worker = members_.all().count({static_cast<int>(Role::kWorker), rank}) > 0;
      if (worker && std::find(workers.begin(), workers.end(), rank) == workers.end()) workers.push_back(rank);
    }
    std::sort(workers.begin(), workers.end());
  }
  const std::pair<int, int> reporter{static_cast<int>(m.info.role), m.info.rank};
  if (workers.empty()) {
    reports_.erase(reporter);
  } else {
    reports_[reporter] = std::move(workers);
  }
}

bool SchedulerStalls::in_job(const std::pair<int, int>& reporter) const {
  const auto m = members_.all().find(reporter);
  return m != members_.all().end() && !m->second.left() && !m->second.lost();
}

std::vector<int> SchedulerStalls::stalled_on() const {
  std::set<int> named;
  std::set<int> waiting;
  for (const auto& [reporter, ranks] : reports_) {
    if (!in_job(reporter)) continue;  // its last report before it left or was lost
    named.insert(ranks.begin(), ranks.end());
    if (reporter.first == static_cast<int>(Role::kWorker)) waiting.insert(reporter.second);
  }
  std::vector<int> stalled;
  std::set_difference(named.begin(), named.end(), waiting.begin(), waiting.end(), std::back_inserter(stalled));
  if (stalled.empty()) return {named.begin(), named.end()};
  return stalled;
}

std::vector<core::OpenWait> SchedulerStalls::open_waits() const {
  std::vector<core::OpenWait> waits;
  for (const auto& [id, arrived] : barriers_.open()) {
    core::OpenWait wait;
    wait.id = "barrier " + std::to_string(id);
    // The workers due at this barrier that have not entered it.
    for (const auto& [key, m] : members_.all()) {
      if (m.info.role != Role::kWorker || !m.counted() || m.left() || m.first_barrier > id) continue;
      const bool entered = std::find(arrived.begin(), arrived.end(), m.info.rank) != arrived.end();
      if (!entered) wait.waits_for.push_back(m.info.rank);
    }
    std::sort(wait.waits_for.begin(), wait.waits_for.end());
    wait.what = barrier_name(id) + ", entered by " + core::rank_set_text(arrived) + ", not by " +
                core::rank_set_text(wait.waits_for);
    waits.push_back(std::move(wait));
  }
  // Each report names, of its workers, the stalled ones (as stalled_on():
  // not the ones that only wait on others).
  const std::vector<int> stalled = stalled_on();
  for (const auto& [reporter, workers] : reports_) {
    if (!in_job(reporter)) continue;
    core::OpenWait wait;
    const bool server = reporter.first == static_cast<int>(Role::kServer);
    wait.id = reporter_name(reporter) + " " + core::rank_set_text(workers);
    wait.what = reporter_name(reporter) + (server ? "'s dist_sync rounds wait for workers "
                                                  : "'s all-reduce waits for workers ") +
                core::rank_set_text(workers);
    std::set_intersection(workers.begin(), workers.end(), stalled.begin(), stalled.end(),
                          std::back_inserter(wait.waits_for));
    wait.waited_s = threshold_s_;
    waits.push_back(std::move(wait));
  }
  return waits;
}

}  // namespace dt::ps
