#include "ps/server/worker_roster.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

WorkerRoster::WorkerRoster(int num_workers)
    : num_workers_(num_workers),
      departed_(new std::atomic<bool>[static_cast<size_t>(std::max(num_workers, 1))]),
      incarnation_(static_cast<size_t>(std::max(num_workers, 1)), 0) {
  for (int w = 0; w < num_workers; ++w) departed_[static_cast<size_t>(w)] = false;
}

bool WorkerRoster::has_departed(int worker) const {
  return worker >= 0 && worker < num_workers_ && departed_[static_cast<size_t>(worker)].load();
}

void WorkerRoster::depart(int worker, int64_t pid, const std::function<void(int)>& leave) {
  if (worker < 0 || worker >= num_workers_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t current = incarnation_[static_cast<size_t>(worker)];
  // Late news of a process whose place a joined worker has taken.
  if (current != 0 && pid != 0 && pid != current) return;
  depart_locked(worker, leave);
}

void WorkerRoster::depart_locked(int worker, const std::function<void(int)>& leave) {
  if (departed_[static_cast<size_t>(worker)].exchange(true)) return;
  leave(worker);
}

void WorkerRoster::join(int worker, int64_t pid, const std::function<void(int)>& leave,
                        const std::function<void()>& enter) {
  const size_t w = static_cast<size_t>(worker);
  std::lock_guard<std::mutex> lock(mutex_);
  if (incarnation_[w] != pid) {
    // The scheduler took this process in the place of the one before: that
    // one is gone, whether or not the news of it reached this server yet.
    depart_locked(worker, leave);
    incarnation_[w] = pid;
  }
  enter();
  departed_[w] = false;
}

std::vector<std::pair<int, int64_t>> WorkerRoster::joined_workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<int, int64_t>> joined;
  for (int w = 0; w < num_workers_; ++w) {
    const int64_t pid = incarnation_[static_cast<size_t>(w)];
    if (pid != 0 && !departed_[static_cast<size_t>(w)].load()) joined.emplace_back(w, pid);
  }
  return joined;
}

PartAttendance::PartAttendance(const WorkerRoster& roster)
    : absent_(static_cast<size_t>(roster.num_workers())), joined_at_(static_cast<size_t>(roster.num_workers()), 0) {
  for (int w = 0; w < roster.num_workers(); ++w) {
    if (roster.has_departed(w)) absent_[static_cast<size_t>(w)].emplace_back(1, kNever);
  }
}

bool PartAttendance::absent(int worker, int64_t round) const {
  for (const auto& [first, end] : absent_[static_cast<size_t>(worker)]) {
    if (round >= first && round < end) return true;
  }
  return false;
}

bool PartAttendance::someone_returns_after(int64_t round) const {
  for (const auto& gaps : absent_) {
    for (const auto& [first, end] : gaps) {
      if (round >= first && round < end && end != kNever) return true;
    }
  }
  return false;
}

void PartAttendance::depart(int worker, const PartRounds& rounds) {
  absent_[static_cast<size_t>(worker)].emplace_back(rounds.last_pushed(worker) + 1, kNever);
  joined_at_[static_cast<size_t>(worker)] = 0;
}

void PartAttendance::join(int worker, int64_t round, bool sync, PartRounds& rounds) {
  const size_t w = static_cast<size_t>(worker);
  const int64_t joined = joined_at_[w];
  const std::string part = part_name(rounds.info().part);
  if (sync && joined > 0 && rounds.last_pushed(worker) >= joined) {
    throw Error(ErrorCode::kBadState, "worker " + std::to_string(worker) + " joined " + part + " at round " +
                                          std::to_string(joined) + " and pushed since");
  }
  if (sync && (round < rounds.applied_round() + 2 || (joined == 0 && round <= rounds.last_pushed(worker)))) {
    throw Error(ErrorCode::kBadState, "join at round " + std::to_string(round) + ": " + part + " is at round " +
                                          std::to_string(rounds.applied_round() + 1) + " already (ask again)");
  }
  // Ends the gap its departure opened (or moves the end a join before
  // set): the rounds up to round - 1 go on without it.
  for (auto& gap : absent_[w]) {
    if (gap.second == kNever || (joined > 0 && gap.second == joined)) gap.second = round;
  }
  joined_at_[w] = round;
  if (!sync) return;
  rounds.set_last_pushed(worker, round - 1);
  if (rounds.ready()) rounds.advance();
}

void PartAttendance::start_at(int64_t round) {
  for (auto& gaps : absent_) {
    for (auto& gap : gaps) {
      if (gap.first <= round) gap.first = round + 1;
    }
  }
}

}  // namespace dt::ps
