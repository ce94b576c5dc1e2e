// Who is in an all-reduce job's group now, and the communicator over them:
// the record that the survivor group (survivor_group.h) and its companions
// (regroup.h, admission_vote.h, state_hand_over.h) share.
//
// Threading: the thread that runs steps writes it (regroups, admissions);
// the heartbeat thread (a departure, an abort) and the caller's thread
// (traffic, whether a hand-over is due) read it. Every field is guarded by
// `mutex`. StepRecord belongs to the thread that runs steps alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collective/host/host_communicator.h"
#include "core/traffic.h"

namespace dt::kvstore {

// Where a worker stands with handing the job's state to workers that joined.
enum class HandOverPhase {
  kNone,
  // This worker joined the running job and was not let in yet: its first
  // hand-over waits in the scheduler's admission.
  kAwaitingAdmission,
  // Workers were let in just now: the next step is the hand-over.
  kDue,
};

struct GroupMembership {
  mutable std::mutex mutex;
  std::shared_ptr<collective::host::HostCommunicator> comm;  // null until a joined worker is let in
  std::vector<int> workers;       // job ranks in the group, ascending
  std::vector<int> joined;        // of them, the ones let in that have no state yet
  HandOverPhase hand_over = HandOverPhase::kNone;
  uint64_t generation = 0;        // the job's departures plus workers let in, when it formed
  uint64_t departures_seen = 0;   // the job's worker departures, when it formed
  core::Traffic traffic_before;   // of the groups before this one
  bool closed = false;
  std::string closed_why;

  std::shared_ptr<collective::host::HostCommunicator> current() const {
    std::lock_guard<std::mutex> lock(mutex);
    return comm;
  }
};

// The steps this worker finished, and (only when the group regroups) a copy
// of the last one's result: what a regroup settles an interrupted step with.
struct StepRecord {
  uint64_t done = 0;
  std::vector<uint8_t> last_result;
};

// The records the workers of a group exchange through the scheduler
// (regroup progress, admission) hold little-endian counts.
inline void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>(v >> (8 * b)));
}

inline uint64_t get_u64(const std::vector<uint8_t>& in, size_t at) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(in[at + static_cast<size_t>(b)]) << (8 * b);
  return v;
}

inline std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

}  // namespace dt::kvstore
