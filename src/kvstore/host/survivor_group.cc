#include "kvstore/host/survivor_group.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/log.h"
#include "kvstore/host/state_hand_over.h"

namespace dt::kvstore {

using collective::host::HostCommunicator;
using core::Error;
using core::ErrorCode;

SurvivorGroup::SurvivorGroup(ps::ClusterMember& member, const ps::PsOptions& options,
                             collective::host::HostCommunicatorOptions comm_options)
    : member_(member),
      options_(options),
      regroups_(options.worker_loss == ps::WorkerLossPolicy::kContinue),
      regroup_(member, options, comm_options, group_, steps_) {
  if (member.table().joined_running_job) {
    // Let in at its first hand_over(), once its program is ready to train:
    // the workers in the job wait for nothing meanwhile.
    group_.hand_over = HandOverPhase::kAwaitingAdmission;
    if (!regroups_) {
      throw Error(ErrorCode::kBadState, "allreduce: worker " + std::to_string(member.rank()) +
                                            " joined a running job that does not go on after worker loss");
    }
    return;
  }
  const int n = member.table().num_workers;
  for (int r = 0; r < n; ++r) group_.workers.push_back(r);
  ps::ClusterMember* m = &member;
  group_.comm = HostCommunicator::create(
      member.rank(), n, [m](const std::vector<uint8_t>& mine) { return m->allgather(mine); }, comm_options);
  if (member.rank() == 0 && group_.comm->hierarchical()) {
    core::log(core::LogLevel::kInfo, "allreduce",
              "the " + std::to_string(n) +
                  " workers sit on several hosts, as many on each: large all-reduces go hierarchical (within each "
                  "host, then between hosts; DT_HIERARCHICAL_ALLREDUCE=0 for one flat ring)");
  }
}

std::vector<int> SurvivorGroup::workers() const {
  std::lock_guard<std::mutex> lock(group_.mutex);
  return group_.workers;
}

core::Traffic SurvivorGroup::traffic() const {
  std::lock_guard<std::mutex> lock(group_.mutex);
  core::Traffic total = group_.traffic_before;
  if (group_.comm) total += group_.comm->traffic();
  return total;
}

bool SurvivorGroup::regroup_pending() const { return regroups_ && regroup_.pending(); }

void SurvivorGroup::on_departure(int rank, const std::string& why) {
  const size_t departed = regroup_.worker_departures().size();
  std::lock_guard<std::mutex> lock(group_.mutex);
  // The news may come after the step thread, which read the same departed
  // list, regrouped already: the new ring must not be aborted for it. Nor
  // for a departure the group formed after (a joined worker hears of its
  // predecessor's late).
  if (!regroups_ || group_.closed || departed <= group_.departures_seen ||
      std::find(group_.workers.begin(), group_.workers.end(), rank) == group_.workers.end()) {
    return;
  }
  if (group_.comm) group_.comm->abort(why);
}

void SurvivorGroup::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(group_.mutex);
  if (!group_.closed) {
    group_.closed = true;
    group_.closed_why = why;
  }
  if (group_.comm) group_.comm->abort(why);
}

void SurvivorGroup::run_step(const Step& step, void* data, size_t bytes, bool redoable) {
  if (broken_) throw *broken_;
  if (!group_.current()) {
    throw Error(ErrorCode::kBadState, "allreduce: worker " + std::to_string(member_.rank()) +
                                          " joined the running job and was not let in yet: its first collective is "
                                          "hand_over_state, which takes the job's state (the trainer calls it)");
  }
  {
    std::lock_guard<std::mutex> lock(group_.mutex);
    if (group_.hand_over == HandOverPhase::kDue) {
      throw Error(ErrorCode::kBadState, "allreduce: workers were let into the job and wait for its state: every "
                                        "worker's next collective is hand_over_state (after admit_joining_workers "
                                        "returned true), not another");
    }
  }
  auto* bytes_at = static_cast<uint8_t*>(data);
  if (regroups_ && bytes > 0) input_.assign(bytes_at, bytes_at + bytes);
  for (;;) {
    // A loss heard of between steps: regroup before this one starts.
    if (regroup_pending()) regroup_.over_survivors(nullptr, 0, false);
    const std::shared_ptr<HostCommunicator> comm = group_.current();
    try {
      step(*comm);
      break;
    } catch (const Error& e) {
      // A loss that ends the job (the scheduler, or this worker declared
      // lost) aborted the step, or left the links unusable: say that, not
      // what the aborted links said.
      member_.check_peers();
      uint64_t departures = 0;
      {
        std::lock_guard<std::mutex> lock(group_.mutex);
        if (!regroups_ || group_.closed) throw;
        departures = group_.departures_seen;
      }
      // Only a loss the scheduler confirms is regrouped over; any other
      // failure stands.
      if (!regroup_.wait_for_departure(departures)) throw;
      // A survivor that finished the step sent its result: done as well.
      if (regroup_.over_survivors(data, bytes, true)) break;
      if (!redoable) {
        throw Error(e.code(), std::string(e.what()) + " (a worker was lost in this step and no survivor finished "
                                                      "it; it cannot be run again without it: not built)");
      }
      if (bytes > 0) std::memcpy(data, input_.data(), bytes);
    }
  }
  ++steps_.done;
  if (regroups_) steps_.last_result.assign(bytes_at, bytes_at + bytes);
}

void SurvivorGroup::confirm_step(HostCommunicator& comm) const {
  if (!regroups_) return;
  int32_t one = 1;
  comm.all_reduce_sum(&one, 1, core::DType::kInt32);
}

void SurvivorGroup::regroup() {
  // Every survivor regroups once per loss: a second call for the same news
  // would wait in a regroup the others never enter.
  if (broken_ || !regroup_pending()) return;
  try {
    regroup_.over_survivors(nullptr, 0, false);
  } catch (const Error& e) {
    broken_ = e;
  }
}

// ---- joining ----------------------------------------------------------------------

void SurvivorGroup::take_admission(const ps::ClusterMember::Gathered& admitted) {
  Admission admission = read_admission(admitted);
  std::lock_guard<std::mutex> lock(group_.mutex);
  group_.workers = std::move(admission.members);
  group_.joined = std::move(admission.joined);
  group_.generation = admitted.generation;
  group_.departures_seen = admitted.departures;
  // A joined worker counts the steps the others count, so that a loss in the
  // next one settles alike (it keeps no result of theirs: it ran none).
  steps_.done = admission.steps_done;
  steps_.last_result.clear();
}

bool SurvivorGroup::vote_due() { return regroups_ && vote_.due(); }

bool SurvivorGroup::admit_waiting_workers() {
  if (!regroups_) return false;
  if (broken_) throw *broken_;
  const auto now = AdmissionVote::Clock::now();
  AdmissionVote::Ballot vote = vote_.ballot(member_.workers_awaiting_admission() > 0, now);
  run_step(
      [&](HostCommunicator& comm) {
        comm.all_reduce_sum(vote.data(), vote.size(), core::DType::kInt64, AdmissionVote::kTag);
      },
      vote.data(), sizeof(int64_t) * vote.size());
  if (!vote_.count(vote, now)) return false;
  std::vector<int> before;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(group_.mutex);
    before = group_.workers;
    generation = group_.generation;
  }
  ps::ClusterMember::Gathered admitted;
  try {
    admitted = member_.admission(generation, admission_record(false, steps_.done));
  } catch (const Error& e) {
    // A loss the scheduler counted before every worker was there failed the
    // admission for every one of them: the next step regroups, and they
    // vote again after it.
    if (!retry_admission(e)) throw;
    return false;
  }
  std::vector<int> members;
  for (const auto& kv : admitted.data) members.push_back(kv.first);
  // The one waiting was lost before it was let in: nothing changed.
  if (members == before) return false;
  take_admission(admitted);
  regroup_.over_survivors(nullptr, 0, false);
  vote_.restart();
  bool joined = false;
  {
    std::lock_guard<std::mutex> lock(group_.mutex);
    joined = !group_.joined.empty();
    group_.hand_over = joined ? HandOverPhase::kDue : HandOverPhase::kNone;
    core::logf(core::LogLevel::kInfo, "allreduce", "worker %d let worker(s) %s into the job after step %llu",
               member_.rank(), ranks_text(group_.joined).c_str(), static_cast<unsigned long long>(steps_.done));
  }
  return joined;
}

bool SurvivorGroup::hand_over_due() const {
  std::lock_guard<std::mutex> lock(group_.mutex);
  return group_.hand_over != HandOverPhase::kNone;
}

bool SurvivorGroup::awaits_hand_over() const {
  std::lock_guard<std::mutex> lock(group_.mutex);
  return group_.hand_over == HandOverPhase::kAwaitingAdmission ||
         std::find(group_.joined.begin(), group_.joined.end(), member_.rank()) != group_.joined.end();
}

std::vector<uint8_t> SurvivorGroup::hand_over(std::vector<uint8_t> state) {
  bool waiting = false;
  {
    std::lock_guard<std::mutex> lock(group_.mutex);
    waiting = group_.hand_over == HandOverPhase::kAwaitingAdmission;
  }
  if (waiting) {
    take_admission(wait_to_be_let_in(member_, options_));
    regroup_.over_survivors(nullptr, 0, false);
    std::lock_guard<std::mutex> lock(group_.mutex);
    group_.hand_over = HandOverPhase::kNone;
  }
  bool holds = !awaits_hand_over();
  const bool held = holds;
  if (!holds) state.clear();
  {
    // This is the step that was due. (A failed one fails the store: nothing
    // runs after it that the phase would have to stop.)
    std::lock_guard<std::mutex> lock(group_.mutex);
    group_.hand_over = HandOverPhase::kNone;
  }
  run_step(
      [&](HostCommunicator& comm) {
        std::vector<int> members, joined;
        {
          std::lock_guard<std::mutex> lock(group_.mutex);
          members = group_.workers;
          joined = group_.joined;
        }
        hand_over_state_step(comm, members, joined, holds, state);
      },
      nullptr, 0);
  std::lock_guard<std::mutex> lock(group_.mutex);
  group_.joined.clear();
  // A worker that held the state has it already: only a joined one is
  // handed something new.
  if (held) return {};
  return state;
}

}  // namespace dt::kvstore
