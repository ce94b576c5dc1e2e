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

// The servers that hold a part placed on server now, given which of the
// job's servers were lost (lost.size() = the number of servers): the first
// two still there, going round from server. While nothing is lost, server
// and its replica; after a loss the part's surviving holder comes first (it
// serves the pulls) and the next server still there takes a new copy of the
// part, so every part has two holders again (ServerKeyStore's "New
// copies"). One holder when one server is left, none when all are lost.
std::vector<int> part_holders(int server, const std::vector<bool>& lost);
// Whether holder of a part placed on server is one it had from the start
// (server or its replica), or a new copy made after a loss.
inline bool is_original_holder(int holder, int server, int num_servers) {
  return holder == server || holder == replica_server(server, num_servers);
}

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
