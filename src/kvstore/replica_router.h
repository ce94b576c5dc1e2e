// Server replication on the worker side (DT_SERVER_REPLICATION=1,
// dist_sync only), the RequestScheduler's companion for it:
//  - Every push goes to both of the part's holders (ps::part_holders: its
//    server and its replica until a loss), each copy in its server's push
//    lane, its bytes taken (and encoded) once, when the first copy leaves
//    (SharedEncoding); pulls go to the first holder. A request finishes
//    once both copies were acknowledged, so a round's pushes are on both
//    servers before any worker goes past it. A dist_sync pushpull fuses on
//    the first holder by the scheduler's rule; its push to the second
//    leaves apart.
//  - Why the bytes are taken once: the caller's buffer may be the pull's
//    target too (the trainer pushpulls in place), and the part's server may
//    answer the pull before the copy to the replica has left, which must
//    not send the pulled weights; and encoding moves the part's error
//    feedback, which must move once per push.
//  - After lose(s), s's pushes count as delivered (the other copy carries
//    them) and its pulls (a fused pushpull's included) go to the parts'
//    remaining holders, which answer the same bytes: both servers sum the
//    same pushes in rank order with the same optimizer. A message to a
//    server whose connection dropped is parked until the verdict (a loss,
//    the job's failure, or verdict_wait without either).
//  - From then on the parts s held get a new second holder, the next server
//    still there, whose pushes name the holder it is filled from
//    (TensorSlice.adopt_from; ServerKeyStore's "New copies"); once every
//    part this worker initialised has its new copy filled, report_restored
//    tells the scheduler (ClusterMember::report_copies_restored).
// Threading: every call but the setters and report_restored is made with
// the RequestScheduler's mutex held, which guards this object too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "kvstore/request_lanes.h"
#include "ps/key_placement.h"
#include "ps/roles/node_table.h"

namespace dt::kvstore {

class ReplicaRouter {
 public:
  // Queues a unit for server (in its pull lane when waits), with its shared
  // bytes and route; counts it in its request.
  using PlaceFn = std::function<void(int server, ps::wire::DataOp op, const RequestPart& part, bool waits,
                                     std::shared_ptr<SharedEncoding> encoding, CopyRoute route)>;

  // verdict_wait: how long a unit whose connection dropped waits for lose()
  // before it fails with the connection's error.
  ReplicaRouter(int num_servers, std::chrono::milliseconds verdict_wait);

  // Before the first submit (RequestScheduler::on_suspected_loss,
  // on_copies_restored).
  void on_suspected_loss(std::function<void()> ask) { ask_for_news_ = std::move(ask); }
  void on_copies_restored(std::function<void(uint32_t changes)> report) { report_restored_ = std::move(report); }
  // Without the lock: tells the scheduler, when changes has a value.
  void report_restored(std::optional<uint32_t> changes) const;

  // ---- submitting (the lock held) ----
  // Places op on part's holders as above through place; fused(server):
  // whether a pushpull may leave as one message there. Returns the error
  // when no holder is left.
  std::optional<core::Error> place(ps::wire::DataOp op, const RequestPart& part, const PlaceFn& place,
                                   const std::function<bool(int server)>& fused);

  // ---- the units' fate (the lock held) ----
  // Units of a message taken from lane before a loss of its server
  // (and a rejoin, maybe) that came while they waited to leave: moved out of
  // units and redirected (or ended).
  void take_stale(size_t lane, std::vector<LaneUnit>& units, RequestLanes& lanes, EndedUnits& ended);
  // Units whose message to server failed with error: units of a lost server
  // move to the part's other holder; a dropped connection to a server not
  // yet declared lost parks them until the verdict (unless no_verdict():
  // closing, or the job failed). False when error is the units' own.
  bool reroute(int server, const std::vector<LaneUnit>& units, const core::Error& error,
               const std::function<bool()>& no_verdict, RequestLanes& lanes, EndedUnits& ended);
  // Units server acknowledged; the number of changes when they filled the
  // last new copy awaited.
  std::optional<uint32_t> note_filled(int server, const std::vector<LaneUnit>& units);
  // Parked units whose verdict did not come within verdict_wait, with their
  // errors.
  EndedUnits take_expired();
  // Every parked unit's request (closing, or the job failed).
  std::vector<std::shared_ptr<SubmittedRequest>> take_parked();

  // ---- server changes (the lock held) ----
  // The job goes on without server: its parked and queued units are
  // redirected, and its connection is to be dropped (take_drops()). False
  // (nothing done) for a server out of range or lost already; restored as
  // report_restored takes it.
  bool lose(int server, RequestLanes& lanes, EndedUnits& ended, std::optional<uint32_t>& restored);
  // The lost servers whose connections the communication thread is to drop
  // now; it calls drops_done() after. wait_for_drops() waits for that.
  std::vector<int> take_drops();
  void drops_done();
  // A server rejoined in a lost one's place: whether it was lost (else the
  // news is ignored). drop_first: its predecessor's connection was still to
  // be dropped, by the caller now. Waits (lock released meanwhile) for drops
  // the communication thread is making.
  bool rejoining(int server, std::unique_lock<std::mutex>& lock, bool& drop_first);
  // ... and it was reconnected: it takes new copies from now on.
  std::optional<uint32_t> rejoined(int server);

  // ---- questions (the lock held) ----
  bool alive(int server) const { return !lost_.at(static_cast<size_t>(server)); }
  int times_lost(int server) const;
  // The holders of a part placed on home after the changes so far.
  std::vector<ps::PartHolder> holders(int home) const;

 private:
  // A unit whose message failed on a connection that dropped, waiting for
  // the verdict on its server.
  struct Parked {
    LaneUnit unit;
    core::Error error;
    std::chrono::steady_clock::time_point since;
  };

  // Units that were for a lost server: pushes and inits end (their other
  // copy carries them), pulls are queued for the part's first holder now.
  void redirect(std::vector<LaneUnit> units, RequestLanes& lanes, EndedUnits& ended);
  // After a change, the parts whose new copies are not known filled yet;
  // the number of changes when there are none.
  std::optional<uint32_t> await_new_copies();

  const std::chrono::milliseconds verdict_wait_;
  std::function<void()> ask_for_news_;
  std::function<void(uint32_t changes)> report_restored_;
  std::vector<bool> lost_;                   // lost and not rejoined since
  std::vector<ps::ServerChange> changes_;    // the job's server changes, in order
  std::vector<std::vector<Parked>> parked_;  // per server, awaiting the verdict on it
  std::vector<int> to_drop_;                 // lost servers the link still has to drop
  bool dropping_ = false;                    // the communication thread is dropping to_drop_'s
  std::condition_variable dropped_;          // ... and has finished
  // The parts this worker initialised ((key, begin) -> range), new copies
  // known filled (key, begin, holder; a holder's are forgotten when it is
  // lost) and the new copies awaited ((key, begin) -> holder).
  std::map<std::pair<Key, int64_t>, ps::PartRange> initialised_;
  std::set<std::tuple<Key, int64_t, int>> filled_;
  std::map<std::pair<Key, int64_t>, int> awaiting_;
};

}  // namespace dt::kvstore
