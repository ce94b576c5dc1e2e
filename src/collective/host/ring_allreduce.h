// Ring all-reduce (sum): the bandwidth-optimal shape for large arrays. The
// array is cut into n segments (segment j: elements [count*j/n,
// count*(j+1)/n)). Reduce-scatter: in step s = 0 .. n-2, rank r sends segment
// (r - s) mod n to rank r+1 while it receives segment (r - s - 1) mod n from
// rank r-1 and adds it into its own; afterwards rank r holds the full sum of
// segment (r + 1) mod n. All-gather: n-1 more steps pass the finished
// segments around the ring, received straight into place.
//
// The receive side is pipelined in chunks: chunk k+1 is being received (by
// nng's I/O thread) while chunk k is added; the send of a whole segment
// drains concurrently. Each link carries 2 (n-1)/n of the array.
//
// Each element's sum is computed once, by one rank, always in the same order
// (segment j: x_j, then + x_{j+1}, + x_{j+2}, ... around the ring), then
// copied: bit-identical on every rank and from run to run.
//
// `links` may be a subgroup's: links[i] is the stream to the group's i-th
// member (nullptr at `rank`, this rank's index in the group), which is how
// the hierarchical all-reduce runs the two halves within a host and the
// whole ring between hosts.
#pragma once

#include <cstddef>

#include "collective/host/call_header.h"
#include "collective/host/peer_stream.h"
#include "core/dtype.h"

namespace dt::collective::host {

// data (count elements of dtype: float32, int32, int64) = the sum over all
// ranks. chunk_elems >= 1; scratch holds at least 2 * chunk_elems elements.
// The first message on each link starts with header (checked on receipt:
// Error(kProtocol) naming the sender).
void all_reduce_ring(const Links& links, int rank, const CallHeader& header, void* data, size_t count,
                     core::DType dtype, size_t chunk_elems, void* scratch);

// The first half: afterwards this rank's segment ring_segment(count, n,
// (rank + 1) % n) of data holds the sum over the group; the rest of data is
// partial. The first send to the next rank starts with header.
void ring_reduce_scatter(const Links& links, int rank, const CallHeader& header, void* data, size_t count,
                         core::DType dtype, size_t chunk_elems, void* scratch);

// The second half: every rank's finished segment (rank + 1) % n is copied
// into place on every other rank. Sends no header (the reduce-scatter of the
// same call did).
void ring_all_gather(const Links& links, int rank, void* data, size_t count, core::DType dtype);

// Segment j of n of count elements: [begin, end).
struct RingSegment {
  size_t begin = 0;
  size_t end = 0;
};
RingSegment ring_segment(size_t count, int n, int j);

}  // namespace dt::collective::host
