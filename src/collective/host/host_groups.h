// How a communicator's ranks sit on hosts, for the hierarchical all-reduce
// (hierarchical_allreduce.h): each rank's "place" is where it runs (its
// machine and network namespace, mesh_rendezvous.h's place_of_this_process),
// and ranks with the same place form a host.
//
// The hierarchy needs every host to hold the same number L >= 2 of ranks and
// at least two hosts: then the ranks at position i of their hosts' lists
// (ascending rank) form cross group i, one rank per host, and each cross
// group all-reduces the same segment of the array. Any other arrangement
// (one host, one rank per host, hosts of different sizes, e.g. after a worker
// loss) has no hierarchy: the flat ring is used.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dt::collective::host {

struct HostGroups {
  // The ranks on this rank's host, ascending; this rank is local[local_index].
  std::vector<int> local;
  int local_index = 0;
  // One rank per host, each at position local_index of its host's list;
  // hosts in the order of their lowest rank. This rank is cross[host_index].
  std::vector<int> cross;
  int host_index = 0;
};

// places[r]: rank r's place (any string; equal strings = one host). Null
// when there is no hierarchy (see above) or rank is out of range.
std::optional<HostGroups> host_groups(const std::vector<std::string>& places, int rank);

// The flat ring's order of the ranks: each host's ranks one after another
// (hosts in the order of their lowest rank, each host's ranks ascending), so
// the ring crosses between hosts once per host instead of once per rank
// when ranks alternate hosts, as NCCL orders its rings by topology. The
// identity when one host holds every rank or each host's ranks are already
// consecutive.
std::vector<int> ring_order(const std::vector<std::string>& places);

}  // namespace dt::collective::host
