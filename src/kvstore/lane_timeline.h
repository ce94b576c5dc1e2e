// A worker's requests on the timeline: one async span per key part of a
// lane's message (several are in flight at once), from its sending to its
// reply, named by the operation ("push",
// "pull", "pushpull", "init") with the part's key, first element and round,
// the same arguments a server's spans of that round carry
// (ps/server/part_rounds.cc), so a reader (and tests/tools/
// check_timeline.py) can match a worker's pull with the server's sum.
#pragma once

#include <cstdint>
#include <vector>

#include "core/timeline/timeline.h"
#include "kvstore/request_lanes.h"

namespace dt::kvstore {

// The time a message leaves, or -1 while the timeline is off.
inline int64_t lane_send_time() { return core::timeline::recording() ? core::timeline::now_us() : -1; }

// Records units' spans, sent at sent_us (lane_send_time()), answered now.
void record_lane_reply(const std::vector<LaneUnit>& units, int server, int64_t sent_us);

}  // namespace dt::kvstore
