// The plain path of a dist kvstore worker's data requests: the units (one
// part of one key in one op) waiting to leave for each server, in two lanes
// per server, each in (-priority, issue order) with a window of messages in
// flight. Units of one op that leave together are fused into one message, up
// to ~4 MiB. The lanes know nothing of failures: what a lost server means
// for its units is the replica router's (replica_router.h).
// Not thread-safe: RequestScheduler guards it with its mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "kvstore/completion.h"
#include "kvstore/kvstore.h"
#include "optim/update_numbers.h"
#include "ps/key_placement.h"
#include "ps/transport/data_codec.h"

namespace dt::kvstore {

// One part of one key moving in a request (RequestScheduler::Part).
struct RequestPart {
  Key key;
  core::DType dtype;
  const core::Shape* shape;  // the key's full shape; outlives the request
  ps::PartRange range;
  int64_t round;             // dist_sync's round, -1 for none
  const uint8_t* src;        // the key's full host data to push, or null
  uint8_t* dst;              // where the key's full host data is pulled to, or null
  // A push's optimizer numbers for its round (worker 0 of a dist_sync job
  // whose servers run the optimizer; TensorSlice.learning_rate /
  // rescale_grad), empty otherwise.
  optim::UpdateNumbers numbers = {};
};

// The push half of a part (nothing pulled into) and its pull half (nothing
// pushed, so no optimizer numbers either).
inline RequestPart push_half(RequestPart part) {
  part.dst = nullptr;
  return part;
}
inline RequestPart pull_half(RequestPart part) {
  part.src = nullptr;
  part.numbers = {};
  return part;
}

// Everything one submitted request is waiting for.
struct SubmittedRequest {
  std::shared_ptr<Completion> completion = std::make_shared<Completion>();
  size_t units = 0;                  // queued units (a split pushpull part is two)
  std::atomic<size_t> remaining{0};  // units not yet answered
  std::function<void()> on_success;
  std::mutex mutex;
  std::optional<core::Error> error;  // the first failure among its units
};

// The bytes of a push taken once for several copies of it (replica_router.h
// says why), when the first copy leaves.
struct SharedEncoding {
  std::once_flag once;
  std::vector<uint8_t> bytes;
  uint8_t encoding = 0;  // the compression mode, 0 for the raw elements
};

// Where the replica router sent a unit; the defaults are an ordinary unit's.
struct CopyRoute {
  // A push to a new copy of the part, filled from this server
  // (TensorSlice.adopt_from); -1: an ordinary one.
  int adopt_from = -1;
  // Replicated pushes and inits: the server the other copy went to (-1:
  // none), which carries it when this one's server is lost.
  int peer = -1;
  // RequestScheduler::times_lost() of its server when it was queued for it
  // (-1: not replicated). A unit whose server was lost since (and perhaps
  // rejoined: another process, which never held what the unit was placed
  // for) is that loss's: never sent, and its failure, when it comes back,
  // not the rejoined server's.
  int epoch = -1;
};

// A part waiting in a lane.
struct LaneUnit {
  std::shared_ptr<SubmittedRequest> request;
  ps::wire::DataOp op;
  RequestPart part;
  std::shared_ptr<SharedEncoding> encoding;  // replicated pushes and inits, else null
  int priority = 0;                          // its request's
  CopyRoute route;
};

// Units that ended without a reply of their own: with their error, or none
// when another copy of a push carries it.
using EndedUnits = std::vector<std::pair<std::shared_ptr<SubmittedRequest>, std::optional<core::Error>>>;

class RequestLanes {
 public:
  // window: messages in flight per lane.
  RequestLanes(int num_servers, int window);

  // Lane 2s is server s's pushes (and everything that never waits), lane
  // 2s + 1 its pulls (which a dist_sync server holds until their round
  // completes: they must never keep the pushes that complete rounds from
  // leaving).
  static size_t push_lane(int server) { return 2 * static_cast<size_t>(server); }
  static size_t pull_lane(int server) { return 2 * static_cast<size_t>(server) + 1; }
  static int server_of(size_t lane) { return static_cast<int>(lane / 2); }
  size_t size() const { return lanes_.size(); }

  // Queues unit in lane, behind the units of its priority queued before.
  void queue(size_t lane, LaneUnit unit);
  // Whether lane has a unit queued and room for another message.
  bool ready(size_t lane) const;
  // Whether nothing is queued for server and its pull lane has room: a
  // message sent now leaves at once.
  bool idle(int server) const;
  // The next message of a ready lane: its most urgent unit, then the next
  // ones of the same op in priority order while they fit (small keys share
  // a message). Counted in flight until answered().
  std::vector<LaneUnit> take_message(size_t lane);
  // A message of lane was answered, or had nothing left to send: its place
  // is free. Returns whether units are queued there.
  bool answered(size_t lane);
  // Every unit queued for server (both lanes), and for every server.
  std::vector<LaneUnit> take_queued(int server);
  std::vector<LaneUnit> take_all();

 private:
  struct Lane {
    std::map<std::pair<int64_t, uint64_t>, LaneUnit> queued;  // (-priority, issue order)
    int in_flight = 0;
  };

  const int window_;
  std::vector<Lane> lanes_;
  uint64_t next_sequence_ = 0;
};

}  // namespace dt::kvstore
