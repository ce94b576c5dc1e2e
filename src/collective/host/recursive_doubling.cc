#include "collective/host/recursive_doubling.h"

#include "collective/host/reduce_kernels.h"

namespace dt::collective::host {

namespace {

constexpr const char* kWhat = "all_reduce (recursive doubling)";

// Sends data to `to` while receiving the same number of bytes from `from`
// into `into`, each message preceded by the call header.
void exchange(const Links& links, int to, int from, const CallHeader& header, const void* data, void* into,
              size_t bytes) {
  const EncodedCallHeader mine = encode(header);
  EncodedCallHeader theirs{};
  PeerStream* out = to >= 0 ? links[static_cast<size_t>(to)] : nullptr;
  PeerStream* in = from >= 0 ? links[static_cast<size_t>(from)] : nullptr;
  if (out != nullptr) out->start_send(mine.data(), mine.size(), data, bytes);
  if (in != nullptr) {
    in->recv(theirs.data(), theirs.size(), kWhat);
    check_call_header(theirs, header, from);
    in->recv(into, bytes, kWhat);
  }
  if (out != nullptr) out->wait_send(kWhat);
}

}  // namespace

void all_reduce_recursive_doubling(const Links& links, int rank, const CallHeader& header, void* data,
                                   size_t count, core::DType dtype, void* scratch) {
  const int n = static_cast<int>(links.size());
  if (n == 1) return;
  const size_t bytes = count * core::dtype_size(dtype);
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;

  // Fold: an even rank below 2 * extra hands its array to the next rank and
  // waits for the result.
  if (rank < 2 * extra && rank % 2 == 0) {
    exchange(links, rank + 1, -1, header, data, nullptr, bytes);
    exchange(links, -1, rank + 1, header, nullptr, data, bytes);
    return;
  }
  if (rank < 2 * extra) {
    exchange(links, -1, rank - 1, header, nullptr, scratch, bytes);
    sum_into(dtype, data, scratch, count, /*src_first=*/true);
  }

  const int vrank = rank < 2 * extra ? rank / 2 : rank - extra;
  auto real_rank = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  for (int mask = 1; mask < p; mask <<= 1) {
    const int vpeer = vrank ^ mask;
    const int peer = real_rank(vpeer);
    exchange(links, peer, peer, header, data, scratch, bytes);
    sum_into(dtype, data, scratch, count, /*src_first=*/vpeer < vrank);
  }

  if (rank < 2 * extra) exchange(links, rank - 1, -1, header, data, nullptr, bytes);
}

}  // namespace dt::collective::host
