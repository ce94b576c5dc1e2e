#include "kvstore/host/allreduce_stall_watch.h"

#include <string>
#include <utility>

namespace dt::kvstore {

using collective::host::ReceiveWatch;

std::vector<core::OpenWait> allreduce_open_waits(const std::optional<ReceiveWatch::Waiting>& waiting,
                                                 const std::vector<int>& workers) {
  if (!waiting) return {};
  core::OpenWait wait;
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
  if (known) wait.waits_for.push_back(workers[peer]);
  wait.what = "receive from " + (known ? "worker " + std::to_string(workers[peer]) : "rank " + std::to_string(peer)) +
              " in " + call + " [" + waiting->what + "]";
  return {wait};
}

std::unique_ptr<core::StallWatch> start_allreduce_stall_watch(int rank, double threshold_s,
                                                              std::shared_ptr<ReceiveWatch> receives,
                                                              std::function<std::vector<int>()> workers,
                                                              core::StallWatch::Named named) {
  auto watch = std::make_unique<core::StallWatch>(
      "worker " + std::to_string(rank), threshold_s,
      [receives = std::move(receives), workers = std::move(workers)] {
        const std::optional<ReceiveWatch::Waiting> waiting = receives->now();
        return allreduce_open_waits(waiting, waiting && waiting->peer >= 0 ? workers() : std::vector<int>{});
      },
      std::move(named));
  watch->start();
  return watch;
}

}  // namespace dt::kvstore
