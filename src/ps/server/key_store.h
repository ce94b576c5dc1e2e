// The server side of the kvstore, without networking: per part of a key its
// stored value, dtype and full shape, and its dist_sync round. The network
// layer (ServerRequestHandler) feeds it decoded slices and turns its callbacks
// into replies; unit tests drive it directly.
//
// A thin locked facade: each part's rounds are a plain state machine
// (PartRounds); worker departures and joins (WorkerRoster, PartAttendance)
// and new copies (NewCopy) are its companions, each behind its hook; resent
// pushes are answered here, before the rounds see them.
//
// Semantics:
//  - Init: every worker sends init for every key (MXNet's API: all workers
//    call init). The first init of a part creates it; rank 0's value is the
//    one stored (deterministic, whatever the arrival order); other workers'
//    inits only have to agree on dtype, shape and range (kShapeMismatch /
//    kDtypeMismatch otherwise). Until rank 0's init arrives, pushes and
//    pulls of the part wait (so no worker barrier is needed after init).
//    A worker initialising the same part twice is kBadState.
//  - dist_sync (Mode::kSync): push carries round r = the worker's push count
//    for the key (1, 2, ...). The part waits for exactly one push per worker
//    for round r and sums them in worker-rank order (so the result is
//    bit-identical whatever the arrival order), then applies the update:
//    the optimizer when one is set (update_on_kvstore), otherwise the sum
//    replaces the stored value. Then the pulls waiting for round r are
//    answered. A push for round r+1 arriving before round r is applied is
//    held and consumed when round r applies (its done callback fires then:
//    back-pressure on a worker that runs ahead). A second push for a round
//    from the same worker is kBadState ("worker 1 pushed key 3 round 7
//    twice"), never a double count.
//  - Workers the job went on without (DT_WORKER_LOSS=continue) are absent
//    from the rounds after their last push; a worker joining the running
//    job in a lost one's place (join) takes part from the round it joined
//    at. A round that nobody takes part in while someone joins later is
//    empty: nothing is applied (no optimizer step; without an optimizer the
//    stored sum is zero) and the round counts.
//  - Pull with round r waits until round r is applied; round <= 0 (or any
//    round in async mode) reads the latest value.
//  - dist_async (Mode::kAsync): each push is applied at once, atomically per
//    part (the optimizer or, without one, the pushed value replaces the
//    stored one, as MXNet's async server does).
//  - Compressed pulls (set_compression): a dist_sync part without an
//    optimizer holds each round's sum of gradients, which the workers pull
//    to run their own optimizer. When a round applies, its sum is encoded
//    once with the job's mode (ps/compression), after adding what earlier
//    rounds' encodings did not send when the mode has error feedback (one
//    residual per part, on this server, updated once per round, never per
//    pull); every pull answered from that round, by any worker and a
//    PS_RESEND copy included, gets these very bytes, so the workers'
//    replicas stay identical. In full go: rank 0's init value (round 0:
//    weights, not a gradient), a part with an optimizer (weights are never
//    lossy), dist_async (no rounds: a pull reads whatever push came last,
//    and error feedback needs one receiver that gets every encoding), dtypes
//    other than float32, and a round whose sum the mode cannot encode (beyond
//    fp16's range, a NaN): that round sends the compensated sum in full and
//    the part's residual restarts from zero.
//  - Bounds a peer cannot pass (issue 23): dist_sync pushes and pulls name a
//    round at most kRoundWindow past the part's applied round (a pull for
//    round 10^9 is refused, not held forever); every size is checked against
//    the part's real dtype, shape and range before anything is allocated; and
//    the parts' bytes stay below a memory limit (kOutOfMemory naming it).
//
// Threading: every call may come from any thread. Parts are locked one by
// one (a large part does not block small ones); callbacks run on the calling
// thread or on the thread whose push completed a round, with that part's
// lock held, so they must not call back into the store.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/stall_watch.h"
#include "ops/cpu/reduction_pool.h"
#include "optim/optimizer.h"
#include "optim/state_name.h"
#include "ps/compression/gradient_codec.h"
#include "ps/server/new_copy.h"
#include "ps/server/part_rounds.h"
#include "ps/server/round_rules.h"
#include "ps/server/worker_roster.h"
#include "ps/transport/tensor_part.h"

namespace dt::ps {

// How a push reached this server, where fault tolerance is involved.
// How a push reached this server where fault tolerance is involved
// (ServerKeyStore::push).
struct PushRoute {
  // PS_RESEND: a push of a round this worker already pushed is the same
  // request sent again after its reply was lost: never counted again,
  // answered when the first one is (at once, or when a held one is
  // consumed). Without it a second push of a round is kBadState.
  bool resent = false;
  // >= 0: a new copy of the part (see ServerKeyStore, "New copies"): a
  // part this server does not hold yet is taken on as a copy of the one
  // on server adopt_from.
  int adopt_from = -1;
};

class ServerKeyStore {
 public:
  using Mode = StoreMode;
  // Called once: error is null when the push's bytes were consumed (the
  // caller may release them), else why the held push failed.
  using PushDone = PartRounds::PushDone;
  // What a pull is answered with (PartRounds::PullAnswer).
  using PullAnswer = PartRounds::PullAnswer;
  // Called once with the part's value or its encoding, or with an error
  // (answer empty).
  using PullDone = PartRounds::PullDone;

  // How far past a part's applied round a dist_sync push or pull may reach.
  static constexpr int64_t kRoundWindow = PartRounds::kRoundWindow;
  // Above kAutomaticMemoryFloor, the automatic limit is twice the bytes held
  // when the first push arrives (the job's initial key set, with as much
  // again of margin for keys initialised later); before it, half the
  // machine's memory.
  static constexpr uint64_t kAutomaticMemoryFloor = uint64_t{256} << 20;

  // The mode is declared by the workers' init requests (set_mode); the
  // second constructor is for callers that know it up front.
  // memory_limit_bytes: the most the parts' values may take (the stored
  // value and the round's sum, 2 x the part's bytes each; with compressed
  // pulls also a part's residual and encoding, counted from its first
  // encoded round); 0: automatic. reduction: the threads that sum a
  // large part's rounds (MXNET_KVSTORE_REDUCTION_NTHREADS, from the bigarray
  // bound on); Error(kInvalidArgument) for settings ReductionPool refuses.
  explicit ServerKeyStore(int num_workers, uint64_t memory_limit_bytes = 0,
                          const ops::cpu::ReductionSettings& reduction = {});
  ServerKeyStore(Mode mode, int num_workers);
  ~ServerKeyStore();
  ServerKeyStore(const ServerKeyStore&) = delete;
  ServerKeyStore& operator=(const ServerKeyStore&) = delete;

  // Once per store: a different mode later is Error(kBadState) (workers of
  // one job disagree on dist_sync / dist_async). Push and pull before any
  // mode is declared are kBadState.
  void set_mode(Mode mode) { rules_.set_mode(mode); }
  Mode mode() const { return rules_.mode(); }
  int num_workers() const { return num_workers_; }
  // The threads that sum the parts' rounds (for tests and diagnostics).
  const ops::cpu::ReductionPool& reduction_pool() const { return reduction_; }

  // data: the part's bytes (rank 0) — other ranks' values are checked for
  // size only. Throws on a mismatch or a repeated init from one worker;
  // Error(kOutOfMemory) when a new part would pass the memory limit.
  // resent: the worker may have sent this very request before (PS_RESEND,
  // its reply lost): a repeated init is then answered as the first was.
  void init(int worker, const PartInfo& info, const void* data, size_t bytes, bool resent = false);
  // Throws as pull would for a part that is unknown or described
  // differently (dtype, shape, range): lets a caller size a reply from the
  // real part before allocating anything.
  void check_part(const PartInfo& info, const char* op) const;
  // The limit in force now (automatic or configured), and the bytes held.
  uint64_t memory_limit() const;
  uint64_t memory_used() const;

  using PushRoute = ps::PushRoute;
  // Throws (kNotFound, kShapeMismatch, kDtypeMismatch, kBadState,
  // kInvalidArgument) when the push is rejected outright; otherwise done
  // fires now or, for a held push, later.
  // numbers (dist_sync, worker 0's push only; others' are ignored): the
  // learning rate and rescale its round is applied with, whenever the round
  // completes; unset fields take the optimizer's as last set. They stay with
  // a held or kept push, so a replica and a new copy apply each round alike.
  // Returns true when the part is a new copy still being filled: the push
  // was kept there (or was already, when resent), answered at once, not
  // applied (DataReply.held). Said here, not asked after: a fill that fails
  // on another thread meanwhile would make filling() say no, and the worker
  // would count as filled a copy whose kept pushes were dropped.
  bool push(int worker, const PartInfo& info, int64_t round, const void* data, size_t bytes, PushDone done,
            const optim::UpdateNumbers& numbers = {}, const PushRoute& route = {});
  // The same, with the route's fields one by one.
  bool push(int worker, const PartInfo& info, int64_t round, const void* data, size_t bytes, PushDone done,
            bool resent, int adopt_from = -1, const optim::UpdateNumbers& numbers = {}) {
    return push(worker, info, round, data, bytes, std::move(done), numbers, PushRoute{resent, adopt_from});
  }
  // Throws like push when rejected outright; otherwise done fires now or
  // once round is applied.
  void pull(const PartInfo& info, int64_t round, PullDone done);

  // The job's gradient compression, before the first push (the request
  // handler keeps it the same for the whole job): from now on dist_sync
  // parts without an optimizer answer pulls of a round with its encoded sum
  // (see the top of this file). Mode none: pulls stay in full.
  void set_compression(const compression::CompressionConfig& config) { rules_.set_compression(config); }
  // Where the server's time goes (dtrun's live job summary; null: off):
  // the parts' sums, updates and encodings count as computing. Before any
  // request.
  void set_work_clock(WorkClock* clock) { rules_.set_work_clock(clock); }
  // Whether a pull may now be answered encoded (a sync store with a lossy
  // compression and no optimizer): lets a caller skip sizing a reply from
  // the parts before the answers come.
  bool pulls_may_be_encoded() const;
  // What the part's pulls did not send so far (error feedback), nullptr
  // before its first encoded round or without error feedback. For tests:
  // valid until the part's next round applies.
  const std::vector<float>* pull_residual(uint64_t key, int64_t begin) const {
    return rules_.pull_feedback().residual(key, begin);
  }

  // From now on pushes are gradients the optimizer applies. The same
  // description again is a no-op (every worker sends it); a different one
  // replaces the optimizer and its state.
  void set_optimizer(const optim::OptimizerConfig& config);
  bool has_optimizer() const { return rules_.optimizer() != nullptr; }
  // kBadState without an optimizer.
  void set_learning_rate(double lr);
  void set_rescale_grad(double rescale);
  // The optimizer's base learning rate (before any schedule) and gradient
  // rescale, as set last; kBadState without an optimizer.
  double learning_rate() const;
  double rescale_grad() const;

  // The optimizer's state, per part: entries "num_update", "learning_rate"
  // and "<key>/<begin>/<end>.<slot>" (slot: step, mom, mean, var, weight32),
  // copies taken with every part locked in turn. Empty without an optimizer.
  core::NamedArrays optimizer_state() const;
  // The inverse: replaces the optimizer's state with arrays named as
  // optimizer_state() names them (parts this server does not hold are
  // Error(kNotFound), a part's state of the wrong size kInvalidArgument from
  // the optimizer). kBadState without an optimizer. On error nothing changes.
  void load_optimizer_state(const core::NamedArrays& arrays);

  // Fails every held push and waiting pull with error and makes later calls
  // throw it (a lost peer ends the job; nothing waits forever).
  void fail(const core::Error& error);

  // DT_WORKER_LOSS=continue: the job goes on without worker (docs/
  // fault-tolerance.md). dist_sync rounds stop waiting for its pushes: a
  // round it has not pushed completes with the others' (still summed in
  // rank order, skipping it), and one it did push counts that push, as do
  // pushes it made for later rounds before it left. Its pushes and inits
  // from now on are Error(kPeerLost). Idempotent. pid: the process the
  // scheduler declared lost; news about one whose place a joined worker
  // (join) took already is ignored (0: whichever process it is).
  void worker_departed(int worker, int64_t pid = 0);
  bool has_departed(int worker) const;

  // A worker joining the running job in the place of one it went on without
  // (the scheduler took it in; the Join message). join_floor: the lowest round it
  // may join at, over every part (after the rounds being summed, and after
  // the pushes its predecessor made). join: from round on, every part's
  // rounds wait for worker's pushes again and its next push of a part is
  // round; the rounds before go on without it. Its predecessor, if its loss
  // has not reached this server yet, departs first. Error(kBadState) when a
  // part is past round by now (ask join_floor again: a second join with a
  // later round moves the parts already joined, as long as it has not
  // pushed). Its inits of parts that exist are then answered without
  // storing anything: the parts keep the job's values.
  int64_t join_floor(int worker) const;
  void join(int worker, int64_t pid, int64_t round);
  // The workers that joined the running job and are in it now, with their
  // pids: what a server rejoining the job takes from this one (it missed
  // their Join requests, and would take the news of their predecessors'
  // losses for theirs).
  std::vector<std::pair<int, int64_t>> joined_workers() const;

  // New copies (DT_SERVER_REPLICATION=1; docs/fault-tolerance.md): after a
  // server loss the workers give each part that kept one copy a new one on
  // another server, and this is how that server fills it, exactly, while
  // training goes on. dist_sync only (kNotSupported otherwise).
  //  - The workers' pushes of the part to the new copy carry adopt_from (the
  //    server holding it). The first creates the part here, empty; from then
  //    on its pushes are kept here and answered at once (the caller tells
  //    the worker they are kept, not applied: filling()). A worker must not
  //    wait here: its rounds on the source would stop, and another worker
  //    that has not heard of the copy yet may wait for them on the source
  //    before its first push here. A worker's first push here may be of any
  //    round; its rounds go on from it. Of a worker far ahead, only the
  //    pushes a fill may need are kept (its last kRoundWindow + 1 rounds:
  //    no other worker can be further behind, the source's round window
  //    stops it).
  //  - Once every worker in the job has pushed the part here, this server
  //    asks the source (on_fill_wanted) for the part as it is once the round
  //    before the latest of those first pushes is applied there. From that
  //    round on every push of the part is kept here.
  //  - install() puts the source's answer in: its value, its round R, its
  //    optimizer state and, when its pulls are compressed, its residual and
  //    the encoding its pulls of round R get. Held pushes of rounds <= R are in that value already
  //    (answered, not counted again); the later ones are summed as pushes
  //    always are, so the copy computes the very bytes the source does.
  using PartState = ps::PartState;
  using FillRequest = ps::FillRequest;
  using PartStateDone = std::function<void(const core::Error* error, const PartState& state)>;
  // The source's side: done gets the part as it is once round min_round is
  // applied (at once, or from the push that applies it, with the part's lock
  // held). Throws as pull does.
  void part_state(const PartInfo& info, int64_t min_round, PartStateDone done);
  // Called once per part to fill, with the part's lock held (it must not call
  // back into the store; it starts the request and returns). nullptr: none
  // (a fill wanted then waits for a fresh start); once this returns, the
  // callback it replaced never runs again.
  void on_fill_wanted(std::function<void(const FillRequest&)> wanted);
  // The copy's side: state is the source's answer to the request. Throws
  // kBadState for a part that is not waiting for one, or a round below the
  // one asked for; kShapeMismatch for bytes of the wrong size.
  void install(const PartInfo& info, const PartState& state);
  // The source could not answer: the kept pushes are dropped (error goes
  // nowhere: they were answered as kept, and the workers never counted the
  // copy as filled), and the part waits for a fresh start (the workers'
  // next pushes of it).
  void fail_fill(const PartInfo& info, const core::Error& error);
  // Whether the part is a new copy still waiting for its state: a push to it
  // was kept, not applied (DataReply.held).
  bool filling(const PartInfo& info) const;

  // The stall inspector (server_stalls.h): every dist_sync round some
  // workers pushed and others not yet, with those others; ids stay the same
  // while the round does not move.
  std::vector<core::OpenWait> open_rounds() const;

 private:
  struct Entry;
  Entry& find(const PartInfo& info, const char* op) const;
  // The part's entry, created (empty: no value yet) when it is new, within
  // the memory limit. op names the request in errors.
  Entry& find_or_create(const PartInfo& info, const char* op);
  // A push to a new copy (adopt_from): creates the part when new, takes the
  // worker's first push as the start of its rounds, and asks for the fill
  // once every worker has pushed. Returns the part, locked by lock.
  Entry& adopting_locked(int worker, const PartInfo& info, int64_t round, int source,
                         std::unique_lock<std::mutex>& lock);
  // A push the part has counted, holds or has in its state already (resent,
  // or on its way to a filled copy): answers it; false when it is new.
  bool answered_already_locked(Entry& e, int worker, int64_t round, PushDone& done, bool resent);
  // worker left the job: every part's rounds go on without it.
  void depart_parts(int worker);
  // A new copy whose every worker has pushed (or left the job): asks for
  // its state, once.
  void request_fill_locked(Entry& e);
  PartState state_locked(const Entry& e) const;
  // Error(kInvalidArgument) for a rank outside the job; op names the request.
  void check_worker(int worker, const char* op) const;
  void throw_if_failed() const;

  const int num_workers_;
  const std::shared_ptr<core::Context> cpu_;
  // Before entries_: the parts' rounds sum on it until they are gone.
  ops::cpu::ReductionPool reduction_;
  RoundRules rules_;
  WorkerRoster roster_;

  // Guards the map's shape (insertions); entries have their own locks.
  mutable std::shared_mutex entries_mutex_;
  std::map<std::pair<uint64_t, int64_t>, std::unique_ptr<Entry>> entries_;
  uint64_t next_optimizer_key_ = 0;
  // Guarded by entries_mutex_: what the parts take, and the limit (0 until
  // the first push fixes an automatic one).
  uint64_t memory_used_ = 0;
  uint64_t memory_limit_ = 0;
  const bool automatic_limit_;
  std::atomic<bool> pushed_{false};
  // Held while fill_wanted_ runs or changes (taken under a part's lock), so
  // that once on_fill_wanted(nullptr) returns the old callback never runs.
  std::mutex fill_mutex_;
  std::function<void(const FillRequest&)> fill_wanted_;

  mutable std::mutex failure_mutex_;
  std::unique_ptr<core::Error> failure_;
};

}  // namespace dt::ps
