// One part's rounds on a server, as a plain state machine: its value, the
// round being summed in worker-rank order, the pushes held for later rounds
// and the pulls waiting for a round (ServerKeyStore states the semantics:
// init, dist_sync rounds, dist_async updates, compressed pulls).
//
// It knows nothing of failures. Whether a worker takes part in a round it
// asks RoundAttendance; everything else a fault-tolerance feature needs
// (keeping a new copy's pushes, answering a resent push) is done around it
// by ServerKeyStore's companions through the calls below.
//
// Threading: none of its own. The caller holds the part's lock around
// every call; callbacks run inside the calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "ops/cpu/reduction_pool.h"
#include "optim/update_numbers.h"
#include "ps/server/round_rules.h"
#include "ps/transport/tensor_part.h"

namespace dt::ps {

// "key 3 [0, 100)", as the server's errors name a part.
std::string part_name(const PartKey& part);

// The hook a part's rounds ask: does worker take part in round? A job that
// never loses a worker answers "yes" throughout.
class RoundAttendance {
 public:
  virtual ~RoundAttendance() = default;
  // The round goes on without worker's push.
  virtual bool absent(int worker, int64_t round) const = 0;
  // Some worker absent from round takes part again in a later round: a
  // round nobody takes part in then counts, empty.
  virtual bool someone_returns_after(int64_t round) const = 0;
};

class PartRounds {
 public:
  // How far past a part's applied round a dist_sync push or pull may reach.
  // A worker's lanes keep a few requests in flight; only a broken or hostile
  // peer goes further.
  static constexpr int64_t kRoundWindow = 8;

  // Called once: error is null when the push's bytes were consumed.
  using PushDone = std::function<void(const core::Error* error)>;
  // What a pull is answered with.
  struct PullAnswer {
    const void* data = nullptr;  // valid only during the callback (null: no bytes)
    size_t bytes = 0;
    // 0: the part's value as stored. Else data is a round's sum encoded in
    // this ps::compression::CompressionMode, also held by shared, which a
    // reply may keep after the call (it never changes).
    uint8_t encoding = 0;
    std::shared_ptr<const std::vector<uint8_t>> shared;
  };
  using PullDone = std::function<void(const core::Error* error, const PullAnswer& answer)>;
  struct HeldPush {
    int worker;
    int64_t round;
    std::vector<uint8_t> bytes;  // copied: the request's buffer is released at once
    PushDone done;
    optim::UpdateNumbers numbers;
  };

  // optimizer_key: unique per part (the optimizer keeps state per key).
  // reduction: the server's summing threads (a large round's sum is cut
  // into ranges, the same bits as one thread's).
  PartRounds(const PartInfo& info, uint64_t optimizer_key, int num_workers, RoundRules& rules,
             const RoundAttendance& attendance, std::shared_ptr<core::Context> cpu,
             ops::cpu::ReductionPool& reduction);

  const PartInfo& info() const { return info_; }
  int num_workers() const { return num_workers_; }
  size_t bytes() const { return bytes_; }
  uint64_t optimizer_key() const { return optimizer_key_; }
  // Rank 0's value (or a state to start from) has arrived.
  bool ready() const { return ready_; }
  int64_t applied_round() const { return applied_round_; }
  // The last round worker pushed (0: none); set by a companion where a
  // worker's rounds start over (a join, a new copy's first push).
  int64_t last_pushed(int worker) const { return pushed_round_[static_cast<size_t>(worker)]; }
  void set_last_pushed(int worker, int64_t round) { pushed_round_[static_cast<size_t>(worker)] = round; }
  void forget_pushes();
  const core::NDArray& value() const { return stored_; }
  const std::shared_ptr<const std::vector<uint8_t>>& encoded() const { return encoded_; }
  uint8_t encoding() const { return encoding_; }

  // Throws (kDtypeMismatch, kShapeMismatch) unless info and bytes describe
  // this part. op names the request.
  void check(const PartInfo& info, size_t bytes, const char* op) const;

  bool inited_by(int worker) const { return inited_by_[static_cast<size_t>(worker)]; }
  bool inited_by_anyone() const;
  // worker's init (not inited_by it before); rank 0's data (bytes() of it)
  // becomes the value.
  void init(int worker, const void* data);

  // dist_sync: throws kBadState unless round is worker's next (a second
  // push of a round, one that skips rounds, or, when windowed, one more
  // than kRoundWindow past the applied round). held_already: worker's push
  // of round is held here.
  void check_round(int worker, int64_t round, bool held_already, bool windowed) const;
  // Whether a push of round must wait: before the value exists, or
  // (dist_sync) for a later round than the one being summed.
  bool must_hold(int64_t round) const;
  // Keeps a copy of the push until its round comes (dist_sync: it counts
  // as worker's last push).
  void hold(int worker, int64_t round, const void* data, PushDone done, const optim::UpdateNumbers& numbers);
  // A push of the round being summed (dist_async: applied at once); done
  // fires before this returns.
  // (done by reference: a caller replaying a held push answers it with the
  // error should the round's update throw.)
  void push(int worker, int64_t round, const void* data, PushDone& done, const optim::UpdateNumbers& numbers);
  // worker's held push of round, null if none.
  HeldPush* held_push(int worker, int64_t round);
  // Forgets the held pushes which says, unanswered.
  void drop_held(const std::function<bool(const HeldPush&)>& which);
  // Answers the held pushes of rounds up to round without counting them
  // (the value holds them already).
  void settle_held_through(int64_t round);
  // Answers every held push with error (and, with pulls, every waiting pull).
  void fail_held(const core::Error& error);
  void fail(const core::Error& error);

  // Sums the staged pushes that are next in rank order, passing workers
  // absent from the round; completes the round when every rank is passed.
  void advance();

  // dist_sync: done fires once round is applied (at once when it is);
  // dist_async and round <= 0: the latest value. Throws kBadState for a
  // round more than kRoundWindow ahead.
  void pull(int64_t round, PullDone done);

  // The rounds go on from round with value (bytes() of it), as a new copy's
  // fill brings it: encoded (null: none) is round's encoding for pulls. The
  // part is ready: waiting pulls and held pushes go on.
  void start_at(int64_t round, const void* value, std::shared_ptr<const std::vector<uint8_t>> encoded,
                uint8_t encoding);
  // What the part holds from now on are weights (an optimizer was set): no
  // earlier round's encoding answers a pull.
  void clear_encoding();
  // Counts the part's residual and encoding in the rules' compression
  // bytes, once.
  void count_compression(const compression::GradientCodec& codec);

 private:
  void accumulate(int worker, const void* data);
  // merged = data for the round's first term, merged += data after it.
  void add_term(const void* data);
  void complete_round();
  // A round nobody took part in: nothing applied, the round counted.
  void complete_empty_round();
  void apply(const void* single_value);
  // After a dist_sync round applied: encodes the part's sum for its pulls,
  // when they are compressed.
  void encode();
  PullAnswer answer() const;
  void answer_pulls();
  void release_held();

  const PartInfo info_;
  const uint64_t optimizer_key_;
  const size_t bytes_;
  const int num_workers_;
  RoundRules& rules_;
  const RoundAttendance& attendance_;
  const std::shared_ptr<core::Context> cpu_;
  ops::cpu::ReductionPool& reduction_;

  std::vector<bool> inited_by_;
  bool ready_ = false;
  core::NDArray stored_;  // 1-d, the part's elements
  core::NDArray merged_;  // the round's sum in rank order (the optimizer's gradient)
  // dist_sync: pushes that arrived before a lower rank's, kept until the
  // ranks below them are summed.
  std::vector<std::vector<uint8_t>> staged_;
  std::vector<int64_t> pushed_round_;  // per worker: the last round it pushed (0: none)
  int summed_ = 0;                     // ranks [0, summed) are in merged, or passed (absent)
  int terms_ = 0;                      // how many pushes merged holds this round
  int64_t applied_round_ = 0;
  std::vector<HeldPush> held_;  // later rounds' pushes, or pushes before rank 0's init
  std::vector<std::pair<int64_t, PullDone>> waiting_pulls_;
  // Compressed pulls: the applied round's sum as its pulls get it (null:
  // they get the stored value), in mode encoding_ (0: a round that went in
  // full); replaced, never changed, when the next round applies.
  std::shared_ptr<const std::vector<uint8_t>> encoded_;
  uint8_t encoding_ = 0;
  bool compression_counted_ = false;
  // dist_sync: the numbers worker 0 pushed the round being summed with
  // (empty until its push is in, or when it sent none).
  optim::UpdateNumbers round_numbers_;
};

}  // namespace dt::ps
