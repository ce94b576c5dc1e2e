// The allreduce store's stall inspector (core/stall_watch.h), a companion
// of its plain path: the communicators note the receive or send they block
// on (collective/host/link_watch.h), and this watch names the worker whose
// bytes have not come (or who does not take ours), the call and bucket it
// belongs to, and since when, once a wait is older than DT_STALL_WARNING_S;
// then that it resumed.
//
// A ring or recursive-doubling step waits on one peer at a time, so a
// worker names the peer it waits on: in a ring of more than two the
// stopped worker's successor names it, the one after names the successor
// (which waits too). So the watch also tells the scheduler, with its
// heartbeats, whom it waits for; the scheduler passes on the workers named
// that do not wait themselves (ps/scheduler/scheduler_stalls.h), and every
// waiting worker names them instead of its peer. Waits in the rendezvous or
// a regroup (meeting the other workers through the scheduler) name only
// those: the scheduler's own watch names the workers missing at its
// barriers.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "collective/host/link_watch.h"
#include "core/stall_watch.h"
#include "ps/roles/cluster_member.h"

namespace dt::kvstore {

// The waits open now: the noted receive or send, its peer (a communicator rank)
// named by its rank in the job through workers (the group's job ranks,
// indexed by communicator rank). The wait is for the workers the scheduler
// says are stalled (stalled: its news, ps::ClusterMember::stalled_workers),
// where it names some: they name the stopped worker to those that wait on
// it through others; else for that peer.
std::vector<core::OpenWait> allreduce_open_waits(const std::optional<collective::host::LinkWatch::Waiting>& waiting,
                                                 const std::vector<int>& workers, const std::vector<int>& stalled = {});

// Worker `rank`'s watch over link_waits, with member (which must outlive it):
// named to the scheduler with the heartbeats, and its news read.
// workers() reads the group now (any thread). Started; off (no thread) when
// threshold_s is 0. Destroy it before whatever workers() reads.
std::unique_ptr<core::StallWatch> start_allreduce_stall_watch(ps::ClusterMember& member, double threshold_s,
                                                              std::shared_ptr<collective::host::LinkWatch> link_waits,
                                                              std::function<std::vector<int>()> workers);

}  // namespace dt::kvstore
