// The small header that opens every collective call on each link the call
// uses: which collective (and algorithm), the call's sequence number on this
// communicator, the element count and dtype, the root, and the caller's tag
// (what the call is about: the allreduce kvstore puts a bucket's first key
// and a fingerprint of its keys there, so buckets that differ across ranks
// are caught even when their sizes agree). Received before any
// data, so that ranks which disagree fail with Error(kProtocol) naming the
// peer instead of exchanging mismatched bytes. Chunks after it carry no
// header.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace dt::collective::host {

enum class CallKind : uint8_t {
  kAllReduceDoubling = 1,
  kAllReduceRing = 2,
  kBroadcast = 3,
  kBarrier = 4,
  kAllReduceHierarchical = 5,
};

struct CallHeader {
  CallKind kind = CallKind::kBarrier;
  core::DType dtype = core::DType::kUInt8;
  int32_t root = 0;
  uint64_t seq = 0;
  uint64_t count = 0;
  uint64_t tag = 0;
};

constexpr size_t kCallHeaderBytes = 40;
using EncodedCallHeader = std::array<uint8_t, kCallHeaderBytes>;

// Little-endian wire form, starting with a magic and a format version.
EncodedCallHeader encode(const CallHeader& header);

// Throws Error(kProtocol) naming peer when received is not a header or
// describes another call than expected (the text shows both).
void check_call_header(const EncodedCallHeader& received, const CallHeader& expected, int peer);

}  // namespace dt::collective::host
