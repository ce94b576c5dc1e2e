// The scheduler's barriers: which workers wait at which barrier since when,
// with their all-gather data, and the answers once a barrier is complete.
// It knows no members: the scheduler tells it, through two hooks given at
// construction, whether a barrier has every worker it waits for and how to
// answer it. Plain data under the scheduler's one mutex (held on every call).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "core/error.h"
#include "ps/scheduler/member_table.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

// Regroups (the wire's Regroup message) wait beside the numbered barriers,
// under ids no worker's barrier counter reaches: this bit and the generation.
constexpr uint64_t kRegroupBit = uint64_t{1} << 63;
// With kRegroupBit: an admission (workers joining an all-reduce job let in).
constexpr uint64_t kAdmissionBit = uint64_t{1} << 62;
inline bool is_regroup(uint64_t id) { return (id & kRegroupBit) != 0; }
inline bool is_admission(uint64_t id) { return is_regroup(id) && (id & kAdmissionBit) != 0; }
// "barrier 3", "regroup 1", "admission at generation 2"
std::string barrier_name(uint64_t id);

// A regroup or an admission as a worker sent it (the wire's Regroup and
// Admission messages): data points into the received frame.
struct GroupCall {
  int rank;
  uint64_t generation;
  const flatbuffers::Vector<uint8_t>* data;
  bool admission;
};

struct Waiter {
  int rank;
  RequestServer::Reply reply;
  // An all-gather barrier's contribution (wire Barrier.data present).
  std::optional<std::vector<uint8_t>> data;
};

class BarrierBook {
 public:
  using Ready = std::function<bool(uint64_t id, const std::vector<Waiter>& waiters)>;
  using Complete = std::function<void(uint64_t id, std::vector<Waiter>& waiters)>;
  BarrierBook(Ready ready, Complete complete) : ready_(std::move(ready)), complete_(std::move(complete)) {}

  // Adds a worker to barrier id and completes every barrier that is ready.
  void enter(uint64_t id, Waiter waiter);
  bool waits(uint64_t id, int rank) const;
  // A worker's place in every barrier no longer counts (it was lost or
  // left the job): the others may all be there now.
  void drop(int rank);
  // Completes (and forgets) every barrier that has all its workers.
  void complete_ready();
  // Answers every waiter of each barrier `which` selects with an error of
  // code and text(id), and forgets those barriers.
  void fail(const std::function<bool(uint64_t id)>& which, core::ErrorCode code,
            const std::function<std::string(uint64_t id, const Waiter& waiter)>& text);
  // Fails the barriers older than timeout_s, naming how many of live_workers
  // arrived.
  void expire(double timeout_s, int live_workers);
  // Each waiting worker's rank, at the barriers `which` selects.
  std::vector<int> ranks_at(const std::function<bool(uint64_t id)>& which) const;
  // Every open barrier's id and the ranks waiting in it (the stall inspector).
  std::vector<std::pair<uint64_t, std::vector<int>>> open() const;

 private:
  struct Barrier {
    SchedulerClock::time_point started;
    int64_t started_us = 0;  // the same moment, for the timeline
    std::vector<Waiter> waiters;
  };
  static void record_completed(uint64_t id, const Barrier& barrier);
  const Ready ready_;
  const Complete complete_;
  std::map<uint64_t, Barrier> barriers_;
};

// Answers a completed barrier whose workers sent no data (a plain barrier),
// or whose calls are out of step (some sent data, some not); returns false,
// with the waiters sorted by rank, when it is an all-gather to answer with
// answer_gathered.
bool answer_without_gather(uint64_t id, std::vector<Waiter>& waiters);
// Answers every waiter of an all-gather with everyone's data, the job's
// generation and worker departures, and the next barrier of a worker let in.
void answer_gathered(std::vector<Waiter>& waiters, uint64_t generation, uint64_t departures, uint64_t next_barrier);

}  // namespace dt::ps
