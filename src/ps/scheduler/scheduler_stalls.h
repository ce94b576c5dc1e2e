// The scheduler's part of the stall inspector (core/stall_watch.h), a
// companion of the plain path: the workers each server said its dist_sync
// rounds wait for, and each all-reduce worker its receives
// (Heartbeat.stalled_on), passed on to every node in
// HeartbeatReply.stalled_on, and the scheduler's own waits for its watch:
// numbered barriers and regroups some workers have not entered, and the
// reports.
//
// A worker that reports a wait of its own is waiting, not stalled: in a ring
// of three with worker 1 stopped, worker 2 names 1 and worker 0 names 2, and
// the workers passed on are {1}. Only when every worker named waits too (a
// cycle) are they all passed on.
//
// Threading: none; the caller holds the scheduler's lock around every call.
#pragma once

#include <map>
#include <vector>

#include "core/stall_watch.h"
#include "ps/scheduler/barrier_book.h"
#include "ps/scheduler/member_table.h"
#include "ps/transport/protocol_generated.h"

namespace dt::ps {

class SchedulerStalls {
 public:
  // threshold_s: DT_STALL_WARNING_S, how long a server's rounds had waited
  // when it reported them.
  SchedulerStalls(const MemberTable& members, const BarrierBook& barriers, double threshold_s)
      : members_(members), barriers_(barriers), threshold_s_(threshold_s) {}

  // A heartbeat from m: a server's or a worker's report replaces its last
  // one.
  void heard(const Member& m, const wire::Heartbeat& h);
  // Every worker some report names and that reports no wait of its own
  // (see above), ascending.
  std::vector<int> stalled_on() const;
  // The waits the scheduler's watch looks at.
  std::vector<core::OpenWait> open_waits() const;

 private:
  // Whether a reporter is still a member of the job.
  bool in_job(const std::pair<int, int>& reporter) const;

  const MemberTable& members_;
  const BarrierBook& barriers_;
  const double threshold_s_;
  // (role, rank) of a server or worker -> the workers it waits for.
  std::map<std::pair<int, int>, std::vector<int>> reports_;
};

}  // namespace dt::ps
