// One part's new copy on this server, the companion of its rounds for
// replica filling (DT_SERVER_REPLICATION=1; ServerKeyStore, "New copies"):
// after a server loss the workers give each part left with one holder a new
// one on another server, which keeps the workers' pushes while it asks the
// holder (the source) for the part's state, then installs it and goes on
// with the kept pushes as any part's rounds would.
//
// Threading: none of its own; used with its part's lock held.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/safetensors.h"
#include "ps/server/part_rounds.h"
#include "ps/server/worker_roster.h"
#include "ps/transport/tensor_part.h"

namespace dt::ps {

// A part's state as a source hands it to a new copy.
struct PartState {
  int64_t round = 0;            // the part's applied round
  const void* value = nullptr;  // its elements: valid during the callback (the source's) or the call (install)
  size_t bytes = 0;
  core::NamedArrays optimizer;  // its optimizer state (optim::Optimizer::key_state), copies; empty without
  // Compressed pulls: what its pulls' encodings did not send (empty: none
  // yet, or no error feedback), and round R's encoding for its pulls
  // (null: they get the value), in CompressionMode `encoding`.
  std::vector<float> pull_residual;
  std::shared_ptr<const std::vector<uint8_t>> encoded;
  uint8_t encoding = 0;
};

// What a new copy asks its source for.
struct FillRequest {
  PartInfo info;
  int source = -1;        // the server to ask (part_state)
  int64_t min_round = 0;  // the round it must have applied
};

class NewCopy {
 public:
  // Taken on as a new copy (inits never store into it).
  bool adopted() const { return phase_ != Phase::kNone; }
  // Waiting for its state: pushes are kept and answered at once.
  bool filling() const { return phase_ == Phase::kGathering || phase_ == Phase::kFillAsked; }
  // A filled copy's state round: a worker's pushes of rounds up to it that
  // arrive after the fill (they were on their way: workers do not wait at a
  // copy) are in the state already. 0 otherwise.
  int64_t filled_round() const { return phase_ == Phase::kFilled ? filled_round_ : 0; }

  // A push of worker's round naming source as the part's holder, to a part
  // that is not ready: begins the copy (again, after a failed fill), and
  // starts worker's rounds here at round. Error(kBadState) when another
  // worker named another source.
  void adopt(int worker, int64_t round, int source, PartRounds& rounds);
  // After worker's push of round was kept: drops its kept pushes that no
  // fill can need (at most kRoundWindow + 2 rounds are kept per worker).
  void keep_needed(int worker, int64_t round, PartRounds& rounds);
  // Once every worker pushed here (or left: departed), the request for the
  // part's state, once; nullopt before and after.
  std::optional<FillRequest> fill_request(const PartInfo& info, const std::function<bool(int)>& departed);
  // Error(kBadState) when no state was asked for, or state comes from
  // before the round asked; kShapeMismatch when it is not bytes long.
  void check_install(const PartInfo& info, size_t bytes, const PartState& state) const;
  // Puts the source's answer in (the caller checked it and loaded the
  // optimizer's and the residual's parts) and starts the rounds from it.
  void install(const PartState& state, PartRounds& rounds, PartAttendance& attendance);
  // The source could not answer: the kept pushes are dropped (answered
  // with error: they were answered as kept already), and the part waits
  // for a fresh start.
  void fail(const core::Error& error, PartRounds& rounds);

 private:
  enum class Phase {
    kNone,        // not a new copy: a part of this server's own
    kGathering,   // pushes kept, waiting for every worker's first push here
    kFillAsked,   // the source was asked for the part's state
    kStalled,     // the fill failed: waits for the workers' next pushes to start again
    kFilled,      // the state is in: the rounds go on as any part's
  };

  int64_t latest_first_push() const;

  Phase phase_ = Phase::kNone;
  int source_ = -1;
  // Per worker: its first push here (0: none yet).
  std::vector<int64_t> first_round_;
  int64_t filled_round_ = 0;
};

}  // namespace dt::ps
