#include "collective/host/ring_allreduce.h"

#include <algorithm>

#include "collective/host/reduce_kernels.h"
#include "core/timeline/timeline.h"

namespace dt::collective::host {

namespace {

constexpr const char* kReduceScatter = "all_reduce (ring reduce-scatter)";
constexpr const char* kAllGather = "all_reduce (ring all-gather)";

// Segment j of data in bytes, and the ring's neighbours modulo n.
struct RingView {
  RingView(void* data, size_t count, core::DType dtype, int n)
      : base(static_cast<uint8_t*>(data)), count(count), es(core::dtype_size(dtype)), n(n) {}
  uint8_t* ptr(int j) const { return base + ring_segment(count, n, j).begin * es; }
  size_t bytes(int j) const {
    const RingSegment s = ring_segment(count, n, j);
    return (s.end - s.begin) * es;
  }
  int mod(int v) const { return ((v % n) + n) % n; }

  uint8_t* const base;
  const size_t count;
  const size_t es;
  const int n;
};

}  // namespace

RingSegment ring_segment(size_t count, int n, int j) {
  const auto at = [&](int k) { return count * static_cast<size_t>(k) / static_cast<size_t>(n); };
  return {at(j), at(j + 1)};
}

void ring_reduce_scatter(const Links& links, int rank, const CallHeader& header, void* data, size_t count,
                         core::DType dtype, size_t chunk_elems, void* scratch) {
  const RingView ring(data, count, dtype, static_cast<int>(links.size()));
  if (ring.n == 1) return;  // nothing to add, and no neighbour to name
  const size_t es = ring.es;
  PeerStream& next = *links[static_cast<size_t>(ring.mod(rank + 1))];
  PeerStream& prev = *links[static_cast<size_t>(ring.mod(rank - 1))];
  const EncodedCallHeader mine = encode(header);
  EncodedCallHeader theirs{};
  uint8_t* buffers[2] = {static_cast<uint8_t*>(scratch), static_cast<uint8_t*>(scratch) + chunk_elems * es};

  for (int s = 0; s < ring.n - 1; ++s) {
    const core::timeline::Span span("collective", "ring reduce-scatter", {"step", s});
    const int send_seg = ring.mod(rank - s);
    const int recv_seg = ring.mod(rank - s - 1);
    if (s == 0) {
      next.start_send(mine.data(), mine.size(), ring.ptr(send_seg), ring.bytes(send_seg));
      prev.recv(theirs.data(), theirs.size(), kReduceScatter);
      check_call_header(theirs, header, prev.peer());
    } else {
      next.start_send(nullptr, 0, ring.ptr(send_seg), ring.bytes(send_seg));
    }
    const size_t elems = ring.bytes(recv_seg) / es;
    uint8_t* target = ring.ptr(recv_seg);
    const size_t chunks = (elems + chunk_elems - 1) / chunk_elems;
    auto chunk_len = [&](size_t c) { return std::min(chunk_elems, elems - c * chunk_elems); };
    if (chunks > 0) prev.start_recv(buffers[0], chunk_len(0) * es);
    for (size_t c = 0; c < chunks; ++c) {
      prev.wait_recv(kReduceScatter);
      if (c + 1 < chunks) prev.start_recv(buffers[(c + 1) % 2], chunk_len(c + 1) * es);
      sum_into(dtype, target + c * chunk_elems * es, buffers[c % 2], chunk_len(c), /*src_first=*/false);
    }
    next.wait_send(kReduceScatter);
  }
}

void ring_all_gather(const Links& links, int rank, void* data, size_t count, core::DType dtype) {
  const RingView ring(data, count, dtype, static_cast<int>(links.size()));
  if (ring.n == 1) return;
  PeerStream& next = *links[static_cast<size_t>(ring.mod(rank + 1))];
  PeerStream& prev = *links[static_cast<size_t>(ring.mod(rank - 1))];
  for (int s = 0; s < ring.n - 1; ++s) {
    const core::timeline::Span span("collective", "ring all-gather", {"step", s});
    const int send_seg = ring.mod(rank + 1 - s);
    const int recv_seg = ring.mod(rank - s);
    next.start_send(nullptr, 0, ring.ptr(send_seg), ring.bytes(send_seg));
    prev.recv(ring.ptr(recv_seg), ring.bytes(recv_seg), kAllGather);
    next.wait_send(kAllGather);
  }
}

void all_reduce_ring(const Links& links, int rank, const CallHeader& header, void* data, size_t count,
                     core::DType dtype, size_t chunk_elems, void* scratch) {
  ring_reduce_scatter(links, rank, header, data, count, dtype, chunk_elems, scratch);
  ring_all_gather(links, rank, data, count, dtype);
}

}  // namespace dt::collective::host
