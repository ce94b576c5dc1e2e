#include "kvstore/host/admission_vote.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>

#include "core/log.h"
#include "kvstore/host/group_membership.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

namespace {

// An admission record: whether the worker is joining (1 byte), then its
// count of finished steps.
constexpr size_t kAdmissionBytes = 9;
// How often the workers in the job vote on letting joined workers in: about
// every this many seconds of their steps. A vote is a small all-reduce
// (about half a millisecond here); voting before every step cost a small
// model's job 10-15% of its speed.
constexpr double kVoteIntervalS = 0.1;
constexpr int64_t kMaxCallsBetweenVotes = 1024;

}  // namespace

bool AdmissionVote::due() {
  // Every worker makes the same calls, so all vote at the same ones: every
  // k-th, k set from the time the steps took since the last vote (summed by
  // the vote itself, so alike everywhere).
  ++calls_since_vote_;
  return --calls_until_vote_ <= 0;
}

AdmissionVote::Ballot AdmissionVote::ballot(bool heard_of_waiting_worker, Clock::time_point now) const {
  // The third number counts the voters: a worker that takes the vote's
  // result from a survivor after a loss (survivor_group.h) must divide by
  // the count that result summed, not by its new group's size, or the
  // survivors' next votes would fall on different calls.
  return Ballot{heard_of_waiting_worker ? 1 : 0,
                std::chrono::duration_cast<std::chrono::microseconds>(now - last_vote_).count(), 1};
}

bool AdmissionVote::count(const Ballot& vote, Clock::time_point now) {
  const double workers = static_cast<double>(std::max<int64_t>(vote[2], 1));
  const double step_s = static_cast<double>(vote[1]) * 1e-6 / workers / static_cast<double>(calls_since_vote_);
  calls_until_vote_ = std::clamp<int64_t>(std::llround(kVoteIntervalS / std::max(step_s, 1e-6)), 1,
                                          kMaxCallsBetweenVotes);
  calls_since_vote_ = 0;
  last_vote_ = now;
  return vote[0] != 0;
}

void AdmissionVote::restart() {
  calls_until_vote_ = 1;
  calls_since_vote_ = 0;
  last_vote_ = Clock::now();
}

std::vector<uint8_t> admission_record(bool joining, uint64_t steps_done) {
  std::vector<uint8_t> record{static_cast<uint8_t>(joining ? 1 : 0)};
  put_u64(record, steps_done);
  return record;
}

Admission read_admission(const ps::ClusterMember::Gathered& admitted) {
  Admission out;
  bool steps_known = false;
  for (const auto& [rank, record] : admitted.data) {
    if (record.size() != kAdmissionBytes || record[0] > 1) {
      throw Error(ErrorCode::kProtocol,
                  "allreduce: worker " + std::to_string(rank) + " sent a malformed admission record");
    }
    out.members.push_back(rank);
    if (record[0] == 1) {
      out.joined.push_back(rank);
      continue;
    }
    const uint64_t theirs = get_u64(record, 1);
    if (steps_known && theirs != out.steps_done) {
      throw Error(ErrorCode::kInternal, "allreduce: the workers in the job let others in after different numbers of "
                                        "steps (" + std::to_string(out.steps_done) + " and " + std::to_string(theirs) +
                                        ")");
    }
    out.steps_done = theirs;
    steps_known = true;
  }
  if (!steps_known) {
    throw Error(ErrorCode::kProtocol, "allreduce: an admission without any worker of the job (workers " +
                                          ranks_text(out.members) + ")");
  }
  return out;
}

bool retry_admission(const Error& e) {
  return e.code() == ErrorCode::kBadState || e.code() == ErrorCode::kTimedOut;
}

ps::ClusterMember::Gathered wait_to_be_let_in(ps::ClusterMember& member, const ps::PsOptions& options) {
  using Clock = std::chrono::steady_clock;
  const int me = member.rank();
  // The workers in the job let it in at their next step; a step may be long
  // and the first admission try may meet the scheduler's deadline.
  const auto deadline =
      Clock::now() + std::chrono::duration<double>(options.startup_timeout_s + options.request_timeout_s);
  core::logf(core::LogLevel::kInfo, "allreduce", "worker %d joined the running job; waiting to be let in", me);
  for (;;) {
    try {
      return member.admission(0, admission_record(true, 0));
    } catch (const Error& e) {
      // The job finished, or lost every worker that held its state: it
      // ends, and this worker after it (a launcher sees the job's end first).
      if (e.code() == ErrorCode::kClosed || e.code() == ErrorCode::kPeerLost) {
        member.wait_for_scheduler_gone(options.heartbeat_timeout_s + 2 * options.heartbeat_interval_s);
      }
      if (e.code() == ErrorCode::kClosed) {
        throw Error(ErrorCode::kClosed, "allreduce: worker " + std::to_string(me) +
                                            " joined too late: every worker in the job finished before letting it in");
      }
      if (e.code() == ErrorCode::kPeerLost) throw;
      if (!retry_admission(e)) throw;
      if (Clock::now() > deadline) {
        throw Error(ErrorCode::kTimedOut, "allreduce: worker " + std::to_string(me) +
                                              " joined the running job, and the workers in it did not let it in "
                                              "within " + ps::seconds_text(options.startup_timeout_s +
                                                                           options.request_timeout_s) +
                                              " (" + e.what() + ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace dt::kvstore
