#include "collective/host/call_header.h"

#include <cstdio>
#include <string>

#include "core/error.h"

namespace dt::collective::host {

namespace {

// "DTHC" and the header format; bumped when the layout changes.
constexpr uint32_t kMagic = 0x43485444;
constexpr uint32_t kVersion = 2;

void put(uint8_t* p, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get(const uint8_t* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

const char* kind_name(uint64_t kind) {
  switch (static_cast<CallKind>(kind)) {
    case CallKind::kAllReduceDoubling: return "all_reduce (recursive doubling)";
    case CallKind::kAllReduceRing: return "all_reduce (ring)";
    case CallKind::kBroadcast: return "broadcast";
    case CallKind::kBarrier: return "barrier";
    case CallKind::kAllReduceHierarchical: return "all_reduce (hierarchical)";
  }
  return "an unknown collective";
}

std::string hex(uint64_t v) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::string describe(uint64_t kind, uint64_t dtype, int64_t root, uint64_t seq, uint64_t count, uint64_t tag) {
  std::string s = std::string(kind_name(kind)) + " #" + std::to_string(seq) + " of " + std::to_string(count);
  if (core::is_valid_dtype(static_cast<int>(dtype))) {
    s += std::string(" ") + core::dtype_name(static_cast<core::DType>(dtype));
  } else {
    s += " dtype " + std::to_string(dtype);
  }
  s += " elements, root " + std::to_string(root);
  if (tag != 0) s += ", tag " + hex(tag);
  return s;
}

}  // namespace

EncodedCallHeader encode(const CallHeader& h) {
  EncodedCallHeader out{};
  put(&out[0], kMagic, 4);
  put(&out[4], kVersion, 2);
  put(&out[6], static_cast<uint8_t>(h.kind), 1);
  put(&out[7], static_cast<uint8_t>(h.dtype), 1);
  put(&out[8], static_cast<uint32_t>(h.root), 4);
  put(&out[16], h.seq, 8);
  put(&out[24], h.count, 8);
  put(&out[32], h.tag, 8);
  return out;
}

void check_call_header(const EncodedCallHeader& r, const CallHeader& expected, int peer) {
  const std::string who = "rank " + std::to_string(peer);
  if (get(&r[0], 4) != kMagic || get(&r[4], 2) != kVersion) {
    throw core::Error(core::ErrorCode::kProtocol,
                      "host communicator: " + who + " sent bytes that are not a collective header (format " +
                          std::to_string(kVersion) + ")");
  }
  const EncodedCallHeader mine = encode(expected);
  if (r != mine) {
    throw core::Error(
        core::ErrorCode::kProtocol,
        "host communicator: " + who + " called " +
            describe(r[6], r[7], static_cast<int32_t>(get(&r[8], 4)), get(&r[16], 8), get(&r[24], 8),
                     get(&r[32], 8)) +
            ", this rank " +
            describe(static_cast<uint8_t>(expected.kind), static_cast<uint8_t>(expected.dtype), expected.root,
                     expected.seq, expected.count, expected.tag) +
            " (every rank must make the same collective calls in the same order)");
  }
}

}  // namespace dt::collective::host
