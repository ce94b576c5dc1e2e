// dtrun --timeline FILE: every process of the job wrote its own timeline
// (DT_TIMELINE=FILE: FILE.scheduler.json, FILE.server.<r>.json,
// FILE.worker.<r>.json, see src/core/timeline/timeline.h); this merges them
// into FILE, one process row per role and rank (workers first, then
// servers, then the scheduler), each shifted onto the scheduler's clock by
// the offset its process measured at registration, and removes the parts.
#pragma once

#include <string>
#include <vector>

namespace dt::dtrun {

struct TimelineMerge {
  size_t events = 0;                   // complete events in FILE
  std::vector<std::string> merged;     // "worker 0", ... in FILE
  std::vector<std::string> missing;    // parts that were not there (a process that never registered)
  std::vector<std::string> unreadable; // "FILE.worker.1.json: why", kept in place
  unsigned long long dropped = 0;      // events the processes' rings dropped
};

// Throws std::runtime_error when FILE cannot be written (the parts stay).
TimelineMerge merge_timeline(const std::string& file, int num_servers, int num_workers);

}  // namespace dt::dtrun
