#include "collective/host/ring_allreduce.h"

#include <algorithm>

#include "collective/host/reduce_kernels.h"
#include "core/timeline/timeline.h"

namespace dt::collective::host {

namespace {

constexpr const char* kReduceScatter = "all_reduce (ring reduce-scatter)";
constexpr const char* kAllGather = "all_reduce (ring all-gather)";

}  // namespace

void all_reduce_ring(const Links& links, int rank, const CallHeader& header, void* data, size_t count,
                     core::DType dtype, size_t chunk_elems, void* scratch) {
  const int n = static_cast<int>(links.size());
  if (n == 1) return;
  const size_t es = core::dtype_size(dtype);
  auto* base = static_cast<uint8_t*>(data);
  auto seg_begin = [&](int j) { return count * static_cast<size_t>(j) / static_cast<size_t>(n); };
  auto seg_ptr = [&](int j) { return base + seg_begin(j) * es; };
  auto seg_bytes = [&](int j) { return (seg_begin(j + 1) - seg_begin(j)) * es; };
  const auto mod = [n](int v) { return ((v % n) + n) % n; };

  PeerStream& next = *links[static_cast<size_t>(mod(rank + 1))];
  PeerStream& prev = *links[static_cast<size_t>(mod(rank - 1))];
  const EncodedCallHeader mine = encode(header);
  EncodedCallHeader theirs{};
  uint8_t* buffers[2] = {static_cast<uint8_t*>(scratch), static_cast<uint8_t*>(scratch) + chunk_elems * es};

  for (int s = 0; s < n - 1; ++s) {
    const core::timeline::Span span("collective", "ring reduce-scatter", {"step", s});
    const int send_seg = mod(rank - s);
    const int recv_seg = mod(rank - s - 1);
    if (s == 0) {
      next.start_send(mine.data(), mine.size(), seg_ptr(send_seg), seg_bytes(send_seg));
      prev.recv(theirs.data(), theirs.size(), kReduceScatter);
      check_call_header(theirs, header, prev.peer());
    } else {
      next.start_send(nullptr, 0, seg_ptr(send_seg), seg_bytes(send_seg));
    }
    const size_t elems = seg_bytes(recv_seg) / es;
    uint8_t* target = seg_ptr(recv_seg);
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

  for (int s = 0; s < n - 1; ++s) {
    const core::timeline::Span span("collective", "ring all-gather", {"step", s});
    const int send_seg = mod(rank + 1 - s);
    const int recv_seg = mod(rank - s);
    next.start_send(nullptr, 0, seg_ptr(send_seg), seg_bytes(send_seg));
    prev.recv(seg_ptr(recv_seg), seg_bytes(recv_seg), kAllGather);
    next.wait_send(kAllGather);
  }
}

}  // namespace dt::collective::host
