#include "ps/scheduler/scheduler_stalls.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

namespace dt::ps {

void SchedulerStalls::heard(const Member& m, const wire::Heartbeat& h) {
  if (m.info.role != Role::kServer) return;
  std::vector<int> workers;
  if (h.stalled_on() != nullptr) {
    // Only the job's workers, once each: what a server says is passed on to
    // every node, so nothing else is.
    for (const int rank : *h.stalled_on()) {
      const bool worker = members_.all().count({static_cast<int>(Role::kWorker), rank}) > 0;
      if (worker && std::find(workers.begin(), workers.end(), rank) == workers.end()) workers.push_back(rank);
    }
    std::sort(workers.begin(), workers.end());
  }
  if (workers.empty()) {
    servers_.erase(m.info.rank);
  } else {
    servers_[m.info.rank] = std::move(workers);
  }
}

std::vector<int> SchedulerStalls::stalled_on() const {
  std::set<int> workers;
  for (const auto& [server, ranks] : servers_) workers.insert(ranks.begin(), ranks.end());
  return {workers.begin(), workers.end()};
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
  for (const auto& [server, workers] : servers_) {
    core::OpenWait wait;
    wait.id = "server " + std::to_string(server) + " " + core::rank_set_text(workers);
    wait.what = "server " + std::to_string(server) + "'s dist_sync rounds wait for workers " +
                core::rank_set_text(workers);
    wait.waits_for = workers;
    wait.waited_s = threshold_s_;
    waits.push_back(std::move(wait));
  }
  return waits;
}

}  // namespace dt::ps
