// The scheduler's part of the stall inspector (core/stall_watch.h), a
// companion of the plain path: the workers each server said its dist_sync
// rounds wait for (Heartbeat.stalled_on), passed on to every node in
// HeartbeatReply.stalled_on, and the scheduler's own waits for its watch:
// numbered barriers and regroups some workers have not entered, and the
// servers' reports.
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

  // A heartbeat from m: a server's report replaces its last one.
  void heard(const Member& m, const wire::Heartbeat& h);
  // Every worker some server's rounds wait for, ascending.
  std::vector<int> stalled_on() const;
  // The waits the scheduler's watch looks at.
  std::vector<core::OpenWait> open_waits() const;

 private:
  const MemberTable& members_;
  const BarrierBook& barriers_;
  const double threshold_s_;
  std::map<int, std::vector<int>> servers_;  // server rank -> workers its rounds wait for
};

}  // namespace dt::ps
