// Which workers take part in which rounds, the companion of the parts'
// rounds for worker departures and joins (docs/fault-tolerance.md):
//  - DT_WORKER_LOSS=continue: a worker the job went on without is absent
//    from each part's rounds after its last push there; its pushes and
//    inits from then on are refused (Error(kPeerLost)).
//  - A worker joining the running job in a lost one's place takes part from
//    the round it joined at; a round nobody takes part in while someone
//    joins later is empty.
// WorkerRoster is the job-wide side (who left, which process joined in
// whose place); PartAttendance is one part's side, the RoundAttendance its
// PartRounds asks.
//
// Threading: WorkerRoster may be called from any thread; departures and
// joins are serialised, and the function each is given (which changes every
// part in turn) runs under that serialisation. has_departed() is lock-free.
// PartAttendance is used with its part's lock held.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "ps/server/part_rounds.h"

namespace dt::ps {

class WorkerRoster {
 public:
  explicit WorkerRoster(int num_workers);

  int num_workers() const { return num_workers_; }
  // worker left the job (DT_WORKER_LOSS=continue) and has not joined again.
  bool has_departed(int worker) const;

  // The job goes on without worker: leave(worker) takes it out of every
  // part's rounds, once per departure. pid: the process the scheduler
  // declared lost; news about one whose place a joined worker took already
  // is ignored (0: whichever process it is).
  void depart(int worker, int64_t pid, const std::function<void(int)>& leave);
  // The process pid joins in worker's place: its predecessor, if its loss
  // has not been heard of yet, leaves first (leave), then enter() moves
  // every part (it may throw: the worker stays departed).
  void join(int worker, int64_t pid, const std::function<void(int)>& leave, const std::function<void()>& enter);
  // The workers that joined the running job and are in it now, with their pids.
  std::vector<std::pair<int, int64_t>> joined_workers() const;

 private:
  void depart_locked(int worker, const std::function<void(int)>& leave);

  const int num_workers_;
  // Per worker: left the job and not joined again. Read under any part's lock.
  std::unique_ptr<std::atomic<bool>[]> departed_;
  // Serialises departures and joins; guards incarnation_. Taken before any
  // lock of the store's.
  mutable std::mutex mutex_;
  // Per worker: the pid of the process that joined last (0: the one that
  // started with the job).
  std::vector<int64_t> incarnation_;
};

class PartAttendance : public RoundAttendance {
 public:
  // A part new to a job that went on without some workers does not wait for them.
  explicit PartAttendance(const WorkerRoster& roster);

  bool absent(int worker, int64_t round) const override;
  bool someone_returns_after(int64_t round) const override;

  // worker left: absent after its last push here (pushes it made for later
  // rounds before it left count in their rounds, as the ones it finished).
  void depart(int worker, const PartRounds& rounds);
  // The round worker joined this part at (0: it started with it).
  int64_t joined_at(int worker) const { return joined_at_[static_cast<size_t>(worker)]; }
  // worker takes part again from round: Error(kBadState) when the part is
  // past it already, or worker pushed since an earlier join. sync: the mode
  // is dist_sync (its next push of the part is then round).
  void join(int worker, int64_t round, bool sync, PartRounds& rounds);
  // A new copy's rounds start after round: a worker that left before is
  // absent from the rounds after it.
  void start_at(int64_t round);

 private:
  // The end of a gap in a worker's rounds that no join has closed.
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  // Per worker: the rounds [first, second) it takes no part in: the job
  // went on without it from the round after its last push until it joined
  // again at second (kNever: it has not).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> absent_;
  std::vector<int64_t> joined_at_;
};

}  // namespace dt::ps
