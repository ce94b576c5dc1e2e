#include "kvstore/host/survivor_group.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

namespace dt::kvstore {

using collective::host::HostCommunicator;
using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kProgressBytes = 16;
// An admission record: whether the worker is joining (1 byte), then its
// count of finished steps.
constexpr size_t kAdmissionBytes = 9;
// The tag of the vote on letting joined workers in.
constexpr uint64_t kAdmissionVoteTag = 0x61646d6974ull;  // "admit"
// How often the workers in the job vote on letting joined workers in: about
// every this many seconds of their steps. A vote is a small all-reduce
// (about half a millisecond here); voting before every step cost a small
// model's job 10-15% of its speed.
constexpr double kVoteIntervalS = 0.1;
constexpr int64_t kMaxCallsBetweenVotes = 1024;

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>(v >> (8 * b)));
}

uint64_t get_u64(const std::vector<uint8_t>& in, size_t at) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(in[at + static_cast<size_t>(b)]) << (8 * b);
  return v;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

}  // namespace

SurvivorGroup::SurvivorGroup(ps::ClusterMember& member, const ps::PsOptions& options,
                             collective::host::HostCommunicatorOptions comm_options)
    : member_(member),
      options_(options),
      comm_options_(std::move(comm_options)),
      regroups_(options.worker_loss == ps::WorkerLossPolicy::kContinue) {
  if (member.table().joined_running_job) {
    // Let in at its first hand_over(), once its program is ready to train:
    // the workers in the job wait for nothing meanwhile.
    awaiting_admission_ = true;
    if (!regroups_) {
      throw Error(ErrorCode::kBadState, "allreduce: worker " + std::to_string(member.rank()) +
                                            " joined a running job that does not go on after worker loss");
    }
    return;
  }
  const int n = member.table().num_workers;
  for (int r = 0; r < n; ++r) workers_.push_back(r);
  ps::ClusterMember* m = &member;
  comm_ = HostCommunicator::create(
      member.rank(), n, [m](const std::vector<uint8_t>& mine) { return m->allgather(mine); }, comm_options_);
}

std::vector<int> SurvivorGroup::workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return workers_;
}

std::shared_ptr<HostCommunicator> SurvivorGroup::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return comm_;
}

core::Traffic SurvivorGroup::traffic() const {
  std::lock_guard<std::mutex> lock(mutex_);
  core::Traffic total = traffic_before_;
  if (comm_) total += comm_->traffic();
  return total;
}

std::vector<ps::LostNode> SurvivorGroup::worker_departures() const {
  std::vector<ps::LostNode> workers;
  for (const ps::LostNode& l : member_.departed()) {
    if (l.role == ps::Role::kWorker) workers.push_back(l);
  }
  return workers;
}

bool SurvivorGroup::regroup_pending() const {
  if (!regroups_) return false;
  const size_t departed = worker_departures().size();
  std::lock_guard<std::mutex> lock(mutex_);
  // A joined worker not let in yet has no group to regroup.
  return !closed_ && comm_ && departed > departures_seen_;
}

void SurvivorGroup::on_departure(int rank, const std::string& why) {
  const size_t departed = worker_departures().size();
  std::lock_guard<std::mutex> lock(mutex_);
  // The news may come after the step thread, which read the same departed
  // list, regrouped already: the new ring must not be aborted for it. Nor
  // for a departure the group formed after (a joined worker hears of its
  // predecessor's late).
  if (!regroups_ || closed_ || departed <= departures_seen_ ||
      std::find(workers_.begin(), workers_.end(), rank) == workers_.end()) {
    return;
  }
  if (comm_) comm_->abort(why);
}

void SurvivorGroup::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!closed_) {
    closed_ = true;
    closed_why_ = why;
  }
  if (comm_) comm_->abort(why);
}

bool SurvivorGroup::wait_for_departure(uint64_t beyond) const {
  // The scheduler declares a lost worker within its heartbeat timeout (at
  // once when the process died: its connection closes); the news then rides
  // the next heartbeat reply.
  const auto deadline = Clock::now() + std::chrono::duration<double>(options_.heartbeat_timeout_s +
                                                                     2 * options_.heartbeat_interval_s + 1);
  // A killed worker's connection to the scheduler closes as its links do:
  // ask rather than wait for the next heartbeat.
  member_.ask_for_news();
  while (Clock::now() < deadline) {
    member_.check_peers();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) return false;
    }
    if (worker_departures().size() > beyond) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void SurvivorGroup::run_step(const Step& step, void* data, size_t bytes, bool redoable) {
  if (broken_) throw *broken_;
  if (!current()) {
    throw Error(ErrorCode::kBadState, "allreduce: worker " + std::to_string(member_.rank()) +
                                          " joined the running job and was not let in yet: its first collective is "
                                          "hand_over_state, which takes the job's state (the trainer calls it)");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (hand_over_due_) {
      throw Error(ErrorCode::kBadState, "allreduce: workers were let into the job and wait for its state: every "
                                        "worker's next collective is hand_over_state (after admit_joining_workers "
                                        "returned true), not another");
    }
  }
  auto* bytes_at = static_cast<uint8_t*>(data);
  if (regroups_ && bytes > 0) input_.assign(bytes_at, bytes_at + bytes);
  for (;;) {
    // A loss heard of between steps: regroup before this one starts.
    if (regroup_pending()) regroup_over_survivors(nullptr, 0, false);
    const std::shared_ptr<HostCommunicator> comm = current();
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
        std::lock_guard<std::mutex> lock(mutex_);
        if (!regroups_ || closed_) throw;
        departures = departures_seen_;
      }
      // Only a loss the scheduler confirms is regrouped over; any other
      // failure stands.
      if (!wait_for_departure(departures)) throw;
      // A survivor that finished the step sent its result: done as well.
      if (regroup_over_survivors(data, bytes, true)) break;
      if (!redoable) {
        throw Error(e.code(), std::string(e.what()) + " (a worker was lost in this step and no survivor finished "
                                                      "it; it cannot be run again without it: not built)");
      }
      if (bytes > 0) std::memcpy(data, input_.data(), bytes);
    }
  }
  ++steps_done_;
  if (regroups_) last_result_.assign(bytes_at, bytes_at + bytes);
}

void SurvivorGroup::regroup() {
  // Every survivor regroups once per loss: a second call for the same news
  // would wait in a regroup the others never enter.
  if (broken_ || !regroup_pending()) return;
  try {
    regroup_over_survivors(nullptr, 0, false);
  } catch (const Error& e) {
    broken_ = e;
  }
}

bool SurvivorGroup::regroup_over_survivors(void* data, size_t bytes, bool in_step) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(options_.request_timeout_s);
  for (;;) {
    const uint64_t departures = worker_departures().size();
    try {
      return try_regroup(data, bytes, in_step);
    } catch (const Error& e) {
      // A worker lost during the regroup, or one the scheduler counted
      // before this worker heard of it: again, over the workers then left.
      const bool another_loss = e.code() == ErrorCode::kBadState || e.code() == ErrorCode::kTimedOut ||
                                e.code() == ErrorCode::kPeerLost || e.code() == ErrorCode::kNetwork;
      if (!another_loss || Clock::now() > deadline || !wait_for_departure(departures)) throw;
    }
  }
}

bool SurvivorGroup::try_regroup(void* data, size_t bytes, bool in_step) {
  // The group's members less the workers departed since it formed.
  const std::vector<ps::LostNode> departures = worker_departures();
  std::vector<int> survivors, departed;
  uint64_t generation = 0;
  size_t departures_known = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    departures_known = std::max<size_t>(departures.size(), departures_seen_);
    for (size_t i = departures_seen_; i < departures.size(); ++i) departed.push_back(departures[i].rank);
    generation = generation_ + (departures_known - departures_seen_);
    for (int r : workers_) {
      if (std::find(departed.begin(), departed.end(), r) == departed.end()) survivors.push_back(r);
    }
  }
  const int me = member_.rank();
  const auto mine_at = std::find(survivors.begin(), survivors.end(), me);
  if (mine_at == survivors.end()) {
    throw Error(ErrorCode::kPeerLost, "allreduce: the job went on without worker " + std::to_string(me) +
                                          " (the scheduler declared it lost)");
  }
  const int new_rank = static_cast<int>(mine_at - survivors.begin());
  const int size = static_cast<int>(survivors.size());

  // The old links close first, so that a survivor still blocked on this
  // worker fails at once and comes to the regroup too.
  std::shared_ptr<HostCommunicator> old = current();
  if (old) old->abort("worker " + std::to_string(me) + " regroups after the loss of worker(s) " + ranks_text(departed));

  std::vector<Progress> progress(survivors.size());
  progress[static_cast<size_t>(new_rank)] = Progress{steps_done_, last_result_.size()};
  const auto exchange = [&](const std::vector<uint8_t>& mesh_address) {
    std::vector<uint8_t> blob;
    put_u64(blob, steps_done_);
    put_u64(blob, last_result_.size());
    blob.insert(blob.end(), mesh_address.begin(), mesh_address.end());
    const std::map<int, std::vector<uint8_t>> all = member_.regroup(generation, blob);
    std::vector<int> gathered;
    for (const auto& kv : all) gathered.push_back(kv.first);
    if (gathered != survivors) {
      throw Error(ErrorCode::kProtocol, "allreduce: the regroup gathered workers " + ranks_text(gathered) +
                                            ", worker " + std::to_string(me) + " expected " + ranks_text(survivors));
    }
    std::vector<std::vector<uint8_t>> addresses(survivors.size());
    for (size_t i = 0; i < survivors.size(); ++i) {
      const std::vector<uint8_t>& theirs = all.at(survivors[i]);
      if (theirs.size() < kProgressBytes) {
        throw Error(ErrorCode::kProtocol, "allreduce: worker " + std::to_string(survivors[i]) +
                                              " sent a malformed regroup record");
      }
      progress[i] = Progress{get_u64(theirs, 0), get_u64(theirs, 8)};
      addresses[i].assign(theirs.begin() + kProgressBytes, theirs.end());
    }
    return addresses;
  };
  std::shared_ptr<HostCommunicator> fresh = HostCommunicator::create(new_rank, size, exchange, comm_options_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (old) traffic_before_ += old->traffic();
    comm_ = fresh;
    workers_ = survivors;
    generation_ = generation;
    departures_seen_ = departures_known;
    joined_.erase(std::remove_if(joined_.begin(), joined_.end(),
                                 [&](int r) { return std::find(survivors.begin(), survivors.end(), r) == survivors.end(); }),
                  joined_.end());
    if (closed_) comm_->abort(closed_why_);
  }

  // Settle the step the loss interrupted.
  uint64_t most = 0, least = UINT64_MAX;
  size_t ahead = 0;
  for (size_t i = 0; i < progress.size(); ++i) {
    if (progress[i].steps_done > most) {
      most = progress[i].steps_done;
      ahead = i;
    }
    least = std::min(least, progress[i].steps_done);
  }
  std::string settled = "no step to settle";
  bool took_result = false;
  if (most > least + 1) {
    throw Error(ErrorCode::kInternal, "allreduce: after the regroup the workers have finished " +
                                          std::to_string(least) + " to " + std::to_string(most) +
                                          " steps (they can differ by one at most)");
  }
  if (most == least + 1) {
    // Every survivor read the same records, so all skip an empty result
    // (a step whose result each worker holds once it finished) alike.
    const size_t result_bytes = progress[ahead].result_bytes;
    if (steps_done_ == most) {
      if (last_result_.size() != result_bytes) {
        throw Error(ErrorCode::kInternal, "allreduce: worker " + std::to_string(me) + " kept " +
                                              std::to_string(last_result_.size()) + " bytes of step " +
                                              std::to_string(most) + ", worker " +
                                              std::to_string(survivors[ahead]) + " " + std::to_string(result_bytes));
      }
      if (result_bytes > 0) fresh->broadcast(last_result_.data(), result_bytes, static_cast<int>(ahead));
    } else {
      if (!in_step || result_bytes != bytes) {
        throw Error(ErrorCode::kInternal, "allreduce: worker " + std::to_string(me) + " is one step behind after "
                                              "the regroup but not in that step (" + std::to_string(bytes) +
                                              " bytes here, " + std::to_string(result_bytes) + " there)");
      }
      if (bytes > 0) fresh->broadcast(data, bytes, static_cast<int>(ahead));
      took_result = true;
    }
    settled = "step " + std::to_string(most) + " taken from worker " + std::to_string(survivors[ahead]) +
              ", which finished it";
  } else if (in_step) {
    settled = "step " + std::to_string(steps_done_ + 1) + " runs again without the lost worker(s)";
  }
  if (departed.empty()) {
    std::fprintf(stderr, "disttrain allreduce: worker %d connected with workers %s\n", me, ranks_text(survivors).c_str());
  } else {
    std::fprintf(stderr,
                 "disttrain allreduce: worker %d regrouped with workers %s after the loss of worker(s) %s: %s\n", me,
                 ranks_text(survivors).c_str(), ranks_text(departed).c_str(), settled.c_str());
  }
  return took_result;
}

// ---- joining ----------------------------------------------------------------------

namespace {

std::vector<uint8_t> admission_record(bool joining, uint64_t steps_done) {
  std::vector<uint8_t> record{static_cast<uint8_t>(joining ? 1 : 0)};
  put_u64(record, steps_done);
  return record;
}

bool retry_admission(const Error& e) {
  // A loss meanwhile (the scheduler failed the admission: ask again at the
  // new count), or nobody let it in before the scheduler's deadline.
  return e.code() == ErrorCode::kBadState || e.code() == ErrorCode::kTimedOut;
}

}  // namespace

void SurvivorGroup::join_running_job() {
  const int me = member_.rank();
  // The workers in the job let it in at their next step; a step may be long
  // and the first admission try may meet the scheduler's deadline.
  const auto deadline =
      Clock::now() + std::chrono::duration<double>(options_.startup_timeout_s + options_.request_timeout_s);
  std::fprintf(stderr, "disttrain allreduce: worker %d joined the running job; waiting to be let in\n", me);
  for (;;) {
    try {
      take_admission(member_.admission(0, admission_record(true, 0)));
      break;
    } catch (const Error& e) {
      // The job finished, or lost every worker that held its state: it
      // ends, and this worker after it (a launcher sees the job's end first).
      if (e.code() == ErrorCode::kClosed || e.code() == ErrorCode::kPeerLost) {
        member_.wait_for_scheduler_gone(options_.heartbeat_timeout_s + 2 * options_.heartbeat_interval_s);
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
                                              "within " + ps::seconds_text(options_.startup_timeout_s +
                                                                           options_.request_timeout_s) +
                                              " (" + e.what() + ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  regroup_over_survivors(nullptr, 0, false);
}

void SurvivorGroup::take_admission(const ps::ClusterMember::Gathered& admitted) {
  std::vector<int> members, joined;
  uint64_t steps = 0;
  bool steps_known = false;
  for (const auto& [rank, record] : admitted.data) {
    if (record.size() != kAdmissionBytes || record[0] > 1) {
      throw Error(ErrorCode::kProtocol,
                  "allreduce: worker " + std::to_string(rank) + " sent a malformed admission record");
    }
    members.push_back(rank);
    if (record[0] == 1) {
      joined.push_back(rank);
      continue;
    }
    const uint64_t theirs = get_u64(record, 1);
    if (steps_known && theirs != steps) {
      throw Error(ErrorCode::kInternal, "allreduce: the workers in the job let others in after different numbers of "
                                        "steps (" + std::to_string(steps) + " and " + std::to_string(theirs) + ")");
    }
    steps = theirs;
    steps_known = true;
  }
  if (!steps_known) {
    throw Error(ErrorCode::kProtocol, "allreduce: an admission without any worker of the job (workers " +
                                          ranks_text(members) + ")");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  workers_ = members;
  joined_ = joined;
  generation_ = admitted.generation;
  departures_seen_ = admitted.departures;
  // A joined worker counts the steps the others count, so that a loss in the
  // next one settles alike (it keeps no result of theirs: it ran none).
  steps_done_ = steps;
  last_result_.clear();
}

bool SurvivorGroup::vote_due() {
  if (!regroups_) return false;
  // Every worker makes the same calls, so all vote at the same ones: every
  // k-th, k set from the time the steps took since the last vote (summed by
  // the vote itself, so alike everywhere).
  ++calls_since_vote_;
  return --calls_until_vote_ <= 0;
}

bool SurvivorGroup::admit_waiting_workers() {
  if (!regroups_) return false;
  if (broken_) throw *broken_;
  const auto now = Clock::now();
  // The third number counts the voters: a worker that takes the vote's
  // result from a survivor after a loss (survivor_group.h) must divide by
  // the count that result summed, not by its new group's size, or the
  // survivors' next votes would fall on different calls.
  int64_t vote[3] = {member_.workers_awaiting_admission() > 0 ? 1 : 0,
                     std::chrono::duration_cast<std::chrono::microseconds>(now - last_vote_).count(), 1};
  run_step([&](HostCommunicator& comm) { comm.all_reduce_sum(vote, 3, core::DType::kInt64, kAdmissionVoteTag); }, vote,
           sizeof(vote));
  const double workers = static_cast<double>(std::max<int64_t>(vote[2], 1));
  const double step_s = static_cast<double>(vote[1]) * 1e-6 / workers / static_cast<double>(calls_since_vote_);
  calls_until_vote_ = std::clamp<int64_t>(std::llround(kVoteIntervalS / std::max(step_s, 1e-6)), 1,
                                          kMaxCallsBetweenVotes);
  calls_since_vote_ = 0;
  last_vote_ = now;
  if (vote[0] == 0) return false;
  std::vector<int> before;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    before = workers_;
    generation = generation_;
  }
  ps::ClusterMember::Gathered admitted;
  try {
    admitted = member_.admission(generation, admission_record(false, steps_done_));
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
  regroup_over_survivors(nullptr, 0, false);
  // The joined ones start counting calls with the others from here.
  calls_until_vote_ = 1;
  calls_since_vote_ = 0;
  last_vote_ = Clock::now();
  bool joined = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    joined = !joined_.empty();
    hand_over_due_ = joined;
    std::fprintf(stderr, "disttrain allreduce: worker %d let worker(s) %s into the job after step %llu\n",
                 member_.rank(), ranks_text(joined_).c_str(), static_cast<unsigned long long>(steps_done_));
  }
  return joined;
}

bool SurvivorGroup::hand_over_due() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hand_over_due_ || awaiting_admission_;
}

bool SurvivorGroup::awaits_hand_over() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return awaiting_admission_ || std::find(joined_.begin(), joined_.end(), member_.rank()) != joined_.end();
}

std::vector<uint8_t> SurvivorGroup::hand_over(std::vector<uint8_t> state) {
  // A step whose result every worker holds once it finished (the closing
  // all-reduce comes after the broadcasts), so a loss in it is run again,
  // over the workers left, from the first of them that holds the state: one
  // that was in the job before, or a joined one that had received all of it.
  bool waiting = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting = awaiting_admission_;
  }
  if (waiting) {
    join_running_job();
    std::lock_guard<std::mutex> lock(mutex_);
    awaiting_admission_ = false;
  }
  bool holds = !awaits_hand_over();
  const bool held = holds;
  if (!holds) state.clear();
  {
    // This is the step that was due. (A failed one fails the store: nothing
    // runs after it that the flag would have to stop.)
    std::lock_guard<std::mutex> lock(mutex_);
    hand_over_due_ = false;
  }
  run_step(
      [&](HostCommunicator& comm) {
        std::vector<int> members, joined;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          members = workers_;
          joined = joined_;
        }
        std::vector<int32_t> holding(members.size(), 0);
        holding[static_cast<size_t>(comm.rank())] = holds ? 1 : 0;
        comm.all_reduce_sum(holding.data(), holding.size(), core::DType::kInt32);
        const auto first = std::find_if(holding.begin(), holding.end(), [](int32_t h) { return h > 0; });
        if (first == holding.end()) {
          throw Error(ErrorCode::kPeerLost, "allreduce: every worker that was in the job before workers " +
                                                ranks_text(joined) + " joined it was lost before handing them its state");
        }
        const int root = static_cast<int>(first - holding.begin());
        uint64_t size = state.size();
        comm.broadcast(&size, sizeof(size), root);
        state.resize(size);
        if (size > 0) comm.broadcast(state.data(), size, root);
        holds = true;
        int32_t one = 1;
        comm.all_reduce_sum(&one, 1, core::DType::kInt32);
      },
      nullptr, 0);
  std::lock_guard<std::mutex> lock(mutex_);
  joined_.clear();
  // A worker that held the state has it already: only a joined one is
  // handed something new.
  if (held) return {};
  return state;
}

}  // namespace dt::kvstore
