// Where each key's bytes live: which server holds which element range.
// Every worker computes the same placement from the same sequence of init
// calls without talking to the others, so placement is a pure function of
// (num_servers, bounds, the keys and sizes in init order).
//  - A tensor up to bigarray_bound_bytes goes whole to the server with the
//    fewest bytes placed so far (ties: the lowest rank), balancing bytes
//    rather than hashing key ids, which leaves servers idle when a few keys
//    are large.
//  - A larger tensor is split into num_servers contiguous element ranges,
//    as even as possible, range i on server i.
//  - Every range is further cut into parts of at most part_bytes: a part is
//    the unit a server stores and counts rounds for, and the unit that
//    messages carry, so no message is larger than about part_bytes and the
//    parts of one big tensor pipeline through several requests in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace dt::ps {

// Elements [begin, end) of a key's flattened tensor, stored on server.
struct PartRange {
  int server = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// Where a part placed on server keeps its copy when servers are replicated
// (DT_SERVER_REPLICATION=1): on the next server, so that the copies of each
// server's parts are all on one other server and a lost server's parts are
// all served by that one. Needs num_servers >= 2.
inline int replica_server(int server, int num_servers) { return (server + 1) % num_servers; }

// A change in the servers of a replicated job, as the scheduler announced
// it: a server lost, or a server started again that took a lost one's place
// (empty: it holds nothing until it is given copies).
struct ServerChange {
  int server = 0;
  bool rejoined = false;  // false: lost
  bool operator==(const ServerChange& other) const {
    return server == other.server && rejoined == other.rejoined;
  }
};

// A server holding a part, and whether it has held it since the job's start
// (the part's server or its replica, never lost since) or took a new copy
// after a change: such a copy is filled from the part's other holder
// (ServerKeyStore's "New copies") and is not given inits.
struct PartHolder {
  int server = 0;
  bool original = false;
  bool operator==(const PartHolder& other) const { return server == other.server && original == other.original; }
};

// The servers that hold a part placed on server after the job's server
// changes (in order), among num_servers:
//  - at the start, server and its replica;
//  - a lost server stops holding it; the part's first holder left serves
//    its pulls, and the next server still there, going round from server,
//    that does not hold it yet takes a new copy, so the part has two
//    holders again;
//  - a server that rejoined holds nothing it held before (its process is
//    new); it takes a new copy of the parts left with one holder (with two
//    servers, all of them), and is otherwise one more server for the new
//    copies of later losses.
// Every node derives the same holders from the same changes, and a server
// only ever stops holding a part by being lost, so no stale copy is ever
// read. One holder when one server is left, none when all are lost.
std::vector<PartHolder> part_holders(int server, int num_servers, const std::vector<ServerChange>& changes);

class KeyPlacement {
 public:
  static constexpr size_t kDefaultPartBytes = size_t{4} << 20;

  // num_servers >= 1, part_bytes >= 1 (Error(kInvalidArgument) otherwise).
  KeyPlacement(int num_servers, uint64_t bigarray_bound_bytes, size_t part_bytes = kDefaultPartBytes);

  // Places key (numel elements of element_size bytes) and returns its parts
  // in element order. Placing a key again returns its first placement when
  // the size agrees, Error(kShapeMismatch) otherwise.
  const std::vector<PartRange>& place(uint64_t key, int64_t numel, size_t element_size);
  // The parts of a placed key, or nullptr.
  const std::vector<PartRange>* find(uint64_t key) const;

  int num_servers() const { return static_cast<int>(server_bytes_.size()); }
  uint64_t server_bytes(int server) const { return server_bytes_.at(static_cast<size_t>(server)); }

 private:
  struct Placed {
    int64_t numel;
    size_t element_size;
    std::vector<PartRange> parts;
  };
  void add_range(std::vector<PartRange>& parts, int server, int64_t begin, int64_t end, size_t element_size);

  uint64_t bigarray_bound_bytes_;
  size_t part_bytes_;
  std::vector<uint64_t> server_bytes_;
  std::map<uint64_t, Placed> placed_;
};

}  // namespace dt::ps
