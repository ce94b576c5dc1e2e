#include "ps/server/new_copy.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

void NewCopy::adopt(int worker, int64_t round, int source, PartRounds& rounds) {
  if (!filling()) {
    // Taken on just now, or started again after a failed fill.
    phase_ = Phase::kGathering;
    source_ = source;
    first_round_.assign(static_cast<size_t>(rounds.num_workers()), 0);
  } else if (source_ != source) {
    throw Error(ErrorCode::kBadState, "worker " + std::to_string(worker) + " gave " +
                                          part_name(rounds.info().part) + " server " + std::to_string(source) +
                                          " as its source, another worker server " + std::to_string(source_));
  }
  const size_t w = static_cast<size_t>(worker);
  if (first_round_[w] == 0) {
    // Its rounds here start with this push. Another worker may have begun
    // many rounds earlier (it heard of the copy a heartbeat sooner): it
    // keeps only the pushes the fill may need (keep_needed).
    first_round_[w] = round;
    rounds.set_last_pushed(worker, round - 1);
  }
}

void NewCopy::keep_needed(int worker, int64_t round, PartRounds& rounds) {
  // Every other worker has pushed round - (kRoundWindow + 1) to the part's
  // other holder at least: this worker could not have pushed `round` there
  // otherwise (a push of round r needs round r - 1 - kRoundWindow applied).
  // So their first pushes here will be of that round or later, and the
  // fill's state will hold every round before it: this worker's kept
  // pushes of those rounds are never needed, and its rounds here start at
  // the first one kept.
  // Not once the fill is asked for: its state's round was fixed by the
  // first pushes as they were.
  if (phase_ != Phase::kGathering) return;
  const int64_t oldest_needed = round - PartRounds::kRoundWindow - 1;
  const size_t w = static_cast<size_t>(worker);
  if (first_round_[w] >= oldest_needed) return;
  rounds.drop_held(
      [&](const PartRounds::HeldPush& h) { return h.worker == worker && h.round < oldest_needed; });
  first_round_[w] = oldest_needed;
}

std::optional<FillRequest> NewCopy::fill_request(const PartInfo& info, const std::function<bool(int)>& departed) {
  if (phase_ != Phase::kGathering) return std::nullopt;
  int64_t latest = 0;
  for (size_t w = 0; w < first_round_.size(); ++w) {
    const int64_t first = first_round_[w];
    if (first == 0 && !departed(static_cast<int>(w))) return std::nullopt;
    latest = std::max(latest, first);
  }
  if (latest == 0) return std::nullopt;  // every worker left before pushing: nothing to fill for
  phase_ = Phase::kFillAsked;
  return FillRequest{info, source_, latest - 1};
}

int64_t NewCopy::latest_first_push() const {
  int64_t latest = 0;
  for (int64_t first : first_round_) latest = std::max(latest, first);
  return latest;
}

void NewCopy::check_install(const PartInfo& info, size_t bytes, const PartState& state) const {
  if (phase_ != Phase::kFillAsked) {
    throw Error(ErrorCode::kBadState, "install: " + part_name(info.part) + " is not a new copy waiting for its state");
  }
  if (state.bytes != bytes || state.value == nullptr) {
    throw Error(ErrorCode::kShapeMismatch, "install: " + part_name(info.part) + " came with " +
                                               std::to_string(state.bytes) + " bytes, not the part's size");
  }
  if (state.round < latest_first_push() - 1) {
    throw Error(ErrorCode::kBadState, "install: " + part_name(info.part) + " came at round " +
                                          std::to_string(state.round) + ", before round " +
                                          std::to_string(latest_first_push() - 1));
  }
}

void NewCopy::install(const PartState& state, PartRounds& rounds, PartAttendance& attendance) {
  // Pushes of the rounds the state holds already are answered; pushes of
  // those rounds still on their way are answered when they come
  // (filled_round), never counted. Each worker's rounds go on after the
  // last it pushed here (or after the state's round).
  rounds.settle_held_through(state.round);
  attendance.start_at(state.round);
  filled_round_ = state.round;
  phase_ = Phase::kFilled;
  source_ = -1;
  first_round_.clear();
  rounds.start_at(state.round, state.value, state.encoded, state.encoding);
}

void NewCopy::fail(const Error& error, PartRounds& rounds) {
  if (!filling()) return;
  rounds.fail_held(error);
  rounds.forget_pushes();
  phase_ = Phase::kStalled;
  source_ = -1;
  first_round_.clear();
}

}  // namespace dt::ps
