// Letting workers that joined a running all-reduce job in
// (DT_WORKER_LOSS=continue), a companion of the survivor group
// (survivor_group.h), which runs its steps.
//
// The workers in the job vote at the calls AdmissionVote::due() picks, about
// every 0.1 s of steps: one small all-reduce of a ballot (whether the worker
// heard, from the scheduler's heartbeats, of a worker waiting in the
// admission; how long its steps took since the last vote; a 1 that counts
// the voters). The summed ballot sets the calls until the next vote, so
// every worker votes at the same calls. When any heard of a waiting worker,
// they all meet it in the scheduler's admission (ClusterMember::admission),
// each with an admission record; a joined worker waits there from its first
// hand-over (wait_to_be_let_in).
//
// Threading: only the thread that runs the group's steps calls these.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "ps/job/job_config.h"
#include "ps/roles/cluster_member.h"

namespace dt::kvstore {

class AdmissionVote {
 public:
  using Clock = std::chrono::steady_clock;
  // What each worker adds to the vote: see above.
  using Ballot = std::array<int64_t, 3>;
  // The tag of the vote's all-reduce.
  static constexpr uint64_t kTag = 0x61646d6974ull;  // "admit"

  // Whether this call of the workers' admission points is one where they
  // vote: counts it. The same on every worker when they all call it at the
  // same points.
  bool due();
  // This worker's ballot, at now.
  Ballot ballot(bool heard_of_waiting_worker, Clock::time_point now) const;
  // After the vote: the summed ballot sets the calls until the next vote,
  // alike everywhere. Returns whether any voter heard of a waiting worker.
  bool count(const Ballot& summed, Clock::time_point now);
  // Workers were let in: they all start counting calls together from here.
  void restart();

 private:
  // Calls left until the next vote, calls since the last, and when it was.
  int64_t calls_until_vote_ = 1;
  int64_t calls_since_vote_ = 0;
  Clock::time_point last_vote_ = Clock::now();
};

// A worker's record in the admission: whether it is joining, and how many
// steps it finished (a joined one takes the others' count).
std::vector<uint8_t> admission_record(bool joining, uint64_t steps_done);

// The admission's answer, read: the group's new members (ascending), which
// of them joined, and the steps the workers in the job finished.
struct Admission {
  std::vector<int> members;
  std::vector<int> joined;
  uint64_t steps_done = 0;
};
// Error(kProtocol) for a malformed record or no worker of the job in it,
// kInternal when the workers in the job count different steps.
Admission read_admission(const ps::ClusterMember::Gathered& admitted);

// Whether an admission that failed with e may be tried again: a loss
// meanwhile (the scheduler failed the admission: ask again at the new
// count), or nobody let the worker in before the scheduler's deadline.
bool retry_admission(const core::Error& e);

// A worker that joined the running job: waits in the admission until the
// workers in it let it in (Error(kTimedOut) after startup_timeout_s +
// request_timeout_s, kClosed when the job finished first).
ps::ClusterMember::Gathered wait_to_be_let_in(ps::ClusterMember& member, const ps::PsOptions& options);

}  // namespace dt::kvstore
