#include "kvstore/host/allreduce_stall_watch.h"

#include <algorithm>
#include <string>
#include <utility>

namespace dt::kvstore {

using collective::host::LinkWatch;

std::vector<core::OpenWait> allreduce_open_waits(const std::optional<LinkWatch::Waiting>& waiting,
                                                 const std::vector<int>& workers, const std::vector<int>& stalled) {
  if (!waiting) return {};
  core::OpenWait wait;
  wait.waits_for = stalled;
  wait.id = "receive " + std::to_string(waiting->id);
  const std::string call = collective::host::call_text(waiting->call);
  if (waiting->peer < 0) {
    wait.what = waiting->what + " through the scheduler, " +
                (waiting->call.seq == 0 ? call : "after " + call);
    return {wait};
  }
  const auto peer = static_cast<size_t>(waiting->peer);
  // A peer the group no longer lists (it regrouped since) is named by its
  // rank in the communicator, as its own errors do.
  const bool known = peer < workers.size();
  // The stalled workers the scheduler names, where it names some: the peer
  // may only wait on them (the text still says whom this receive is from).
  if (known && stalled.empty()) wait.waits_for.push_back(workers[peer]);
  const bool receive = waiting->direction == LinkWatch::Direction::kReceive;
  wait.what = (receive ? "receive from " : "send to ") +
              (known ? "worker " + std::to_string(workers[peer]) : "rank " + std::to_string(peer)) + " in " + call +
              " [" + waiting->what + "]";
  return {wait};
}

std::unique_ptr<core::StallWatch> start_allreduce_stall_watch(ps::ClusterMember& member, double threshold_s,
                                                              std::shared_ptr<LinkWatch> link_waits,
                                                              std::function<std::vector<int>()> workers) {
  auto watch = std::make_unique<core::StallWatch>(
      "worker " + std::to_string(member.rank()), threshold_s,
      [&member, link_waits = std::move(link_waits), workers = std::move(workers)] {
        const std::optional<LinkWatch::Waiting> waiting = link_waits->now();
        if (!waiting) return std::vector<core::OpenWait>{};
        // This worker, waiting, is not the one stalled (the news may name it
        // in a cycle of waits).
        std::vector<int> stalled = member.stalled_workers();
        stalled.erase(std::remove(stalled.begin(), stalled.end(), member.rank()), stalled.end());
        return allreduce_open_waits(waiting, waiting->peer >= 0 ? workers() : std::vector<int>{}, stalled);
      },
      [&member](const std::vector<int>& named) { member.report_stalled_on(named); });
  watch->start();
  return watch;
}

}  // namespace dt::kvstore
