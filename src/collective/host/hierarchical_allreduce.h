// Hierarchical all-reduce (sum) for ranks on several hosts, L >= 2 on each
// (host_groups.h): the shape of Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE and
// of NCCL's rings within a node, on host memory.
//
//  1. within each host, a ring reduce-scatter over the local links (ipc):
//     local rank i then holds its host's sum of segment (i + 1) mod L;
//  2. between hosts, the L cross groups (the ranks at the same local
//     position, one per host) each all-reduce their segment with a ring over
//     TCP, all L at once;
//  3. within each host, a ring all-gather spreads the finished segments.
//
// What crosses a host's link: each of its L ranks sends 2 (H-1)/H of its
// 1/L segment, so the host sends 2 (H-1)/H of the array. A flat ring of the
// n = H L ranks ordered by host (ring_order) makes each host send 2 (n-1)/n
// of it (2 hosts x 2: 1.5x the hierarchy's bytes); one in rank order, as
// gloo's, L times that when ranks alternate hosts (rank r on host r % H, as
// the ssh launcher places workers; 2 x 2: 3x). The L cross rings also run
// side by side, each on its own connection.
//
// Sums stay exact and bit-identical on every rank and run: each element's sum
// is taken once (its host's part in a fixed order around the local ring, then
// the hosts' parts in a fixed order around the cross ring) and copied.
#pragma once

#include <cstddef>

#include "collective/host/call_header.h"
#include "collective/host/host_groups.h"
#include "collective/host/peer_stream.h"
#include "core/dtype.h"

namespace dt::collective::host {

// links: this rank's streams, indexed by rank (as the communicator holds
// them); groups: host_groups() of this rank. Other arguments as
// all_reduce_ring's; header opens the first message on each link used.
void all_reduce_hierarchical(const Links& links, const HostGroups& groups, const CallHeader& header, void* data,
                             size_t count, core::DType dtype, size_t chunk_elems, void* scratch);

}  // namespace dt::collective::host
