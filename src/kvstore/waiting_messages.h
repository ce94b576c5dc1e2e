// The messages a PS worker has sent and not yet had answered, for the stall
// inspector (core/stall_watch.h): which server, which op, the first key and
// round they carry. RequestScheduler notes each message as it leaves and
// as its reply (or failure) comes back; nothing else reads them.
//
// Threading: every call may come from any thread (one small lock).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/stall_watch.h"
#include "kvstore/request_lanes.h"

namespace dt::kvstore {

class WaitingMessages {
 public:
  // A message of units to server left; returns its id for answered().
  uint64_t sent(int server, const std::vector<LaneUnit>& units);
  void answered(uint64_t id);
  // One wait per message in flight, each naming waits_for as the workers
  // it waits for (from the scheduler's news; may be empty).
  std::vector<core::OpenWait> open(const std::vector<int>& waits_for) const;

 private:
  mutable std::mutex mutex_;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::string> in_flight_;  // id -> "pull from server 0: key 3 round 7 (+2 parts)"
};

}  // namespace dt::kvstore
