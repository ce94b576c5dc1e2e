#include "ps/scheduler/barrier_book.h"

#include <algorithm>

#include "core/timeline/timeline.h"
#include "ps/transport/frame.h"

namespace dt::ps {

using core::ErrorCode;

namespace {

double seconds_since(SchedulerClock::time_point t) {
  return std::chrono::duration<double>(SchedulerClock::now() - t).count();
}

}  // namespace

// From the first worker's entry to the last one's: a straggler shows as the
// others' wait.
void BarrierBook::record_completed(uint64_t id, const Barrier& barrier) {
  if (!core::timeline::recording()) return;
  const char* kind = is_admission(id) ? "admission" : is_regroup(id) ? "regroup" : "barrier";
  core::timeline::record("scheduler", kind, barrier.started_us, core::timeline::now_us(),
                         {"id", static_cast<int64_t>(id & ~(kRegroupBit | kAdmissionBit))},
                         {"workers", static_cast<int64_t>(barrier.waiters.size())});
}

std::string barrier_name(uint64_t id) {
  if (is_admission(id)) return "admission at generation " + std::to_string(id & ~(kRegroupBit | kAdmissionBit));
  return is_regroup(id) ? "regroup " + std::to_string(id & ~kRegroupBit) : "barrier " + std::to_string(id);
}

void BarrierBook::enter(uint64_t id, Waiter waiter) {
  Barrier& barrier = barriers_[id];
  if (barrier.waiters.empty()) {
    barrier.started = SchedulerClock::now();
    barrier.started_us = core::timeline::now_us();
  }
  barrier.waiters.push_back(std::move(waiter));
  complete_ready();
}

bool BarrierBook::waits(uint64_t id, int rank) const {
  const auto it = barriers_.find(id);
  if (it == barriers_.end()) return false;
  return std::any_of(it->second.waiters.begin(), it->second.waiters.end(),
                     [rank](const Waiter& w) { return w.rank == rank; });
}

void BarrierBook::drop(int rank) {
  for (auto& [id, barrier] : barriers_) {
    std::vector<Waiter>& waiters = barrier.waiters;
    waiters.erase(std::remove_if(waiters.begin(), waiters.end(), [rank](const Waiter& w) { return w.rank == rank; }),
                  waiters.end());
  }
  complete_ready();
}

void BarrierBook::complete_ready() {
  for (auto it = barriers_.begin(); it != barriers_.end();) {
    if (!ready_(it->first, it->second.waiters)) {
      ++it;
      continue;
    }
    complete_(it->first, it->second.waiters);
    record_completed(it->first, it->second);
    it = barriers_.erase(it);
  }
}

void BarrierBook::fail(const std::function<bool(uint64_t id)>& which, ErrorCode code,
                       const std::function<std::string(uint64_t id, const Waiter& waiter)>& text) {
  for (auto it = barriers_.begin(); it != barriers_.end();) {
    if (!which(it->first)) {
      ++it;
      continue;
    }
    for (Waiter& w : it->second.waiters) w.reply(make_error_reply(code, text(it->first, w)));
    it = barriers_.erase(it);
  }
}

void BarrierBook::expire(double timeout_s, int live_workers) {
  for (auto it = barriers_.begin(); it != barriers_.end();) {
    if (seconds_since(it->second.started) <= timeout_s) {
      ++it;
      continue;
    }
    std::vector<Waiter>& waiters = it->second.waiters;
    const std::string text = barrier_name(it->first) + ": only " + std::to_string(waiters.size()) + " of " +
                             std::to_string(live_workers) + " workers arrived within " + seconds_text(timeout_s);
    for (Waiter& w : waiters) w.reply(make_error_reply(ErrorCode::kTimedOut, text));
    it = barriers_.erase(it);
  }
}

std::vector<int> BarrierBook::ranks_at(const std::function<bool(uint64_t id)>& which) const {
  std::vector<int> ranks;
  for (const auto& [id, barrier] : barriers_) {
    if (!which(id)) continue;
    for (const Waiter& w : barrier.waiters) ranks.push_back(w.rank);
  }
  return ranks;
}

std::vector<std::pair<uint64_t, std::vector<int>>> BarrierBook::open() const {
  std::vector<std::pair<uint64_t, std::vector<int>>> list;
  for (const auto& [id, barrier] : barriers_) {
    std::vector<int> ranks;
    for (const Waiter& w : barrier.waiters) ranks.push_back(w.rank);
    list.emplace_back(id, std::move(ranks));
  }
  return list;
}

bool answer_without_gather(uint64_t id, std::vector<Waiter>& waiters) {
  const size_t with_data = static_cast<size_t>(
      std::count_if(waiters.begin(), waiters.end(), [](const Waiter& w) { return w.data.has_value(); }));
  if (with_data == 0) {
    for (Waiter& w : waiters) w.reply(make_ack());
    return true;
  }
  if (with_data != waiters.size()) {
    const std::string text = barrier_name(id) + ": " + std::to_string(with_data) + " of " +
                             std::to_string(waiters.size()) +
                             " workers sent data (an all-gather met a plain barrier: the workers' calls are out of step)";
    for (Waiter& w : waiters) w.reply(make_error_reply(ErrorCode::kBadState, text));
    return true;
  }
  std::sort(waiters.begin(), waiters.end(), [](const Waiter& a, const Waiter& b) { return a.rank < b.rank; });
  return false;
}

void answer_gathered(std::vector<Waiter>& waiters, uint64_t generation, uint64_t departures, uint64_t next_barrier) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<flatbuffers::Offset<wire::GatheredData>> gathered;
  for (const Waiter& w : waiters) gathered.push_back(wire::CreateGatheredData(fbb, w.rank, fbb.CreateVector(*w.data)));
  // One FlatBuffer, framed once per worker: each reply owns its message.
  Message first =
      make_message(fbb, wire::CreateAck(fbb, fbb.CreateVector(gathered), generation, departures, next_barrier));
  for (size_t i = 0; i < waiters.size(); ++i) {
    waiters[i].reply(i == 0 ? std::move(first) : encode_frame(fbb.GetBufferPointer(), fbb.GetSize(), 0, nullptr));
  }
}

}  // namespace dt::ps
