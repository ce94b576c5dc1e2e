// One event of a timeline, as Chrome's trace-event format names it: a span
// of one thread ("ph":"X", a complete event), or of something that overlaps
// others of its kind, such as the requests a worker has in flight (an async
// span, written as a "b"/"e" pair with an id of its own), with up to four
// integer arguments (the key, the part's first element, the round, a
// worker's rank).
//
// Fixed size and free of allocations, so that recording one costs a copy
// into a slot of the ring (event_ring.h): names longer than the slot are cut.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dt::core::timeline {

// One argument: its name must be a string literal (it is kept as a pointer).
struct TraceArg {
  const char* name = nullptr;  // null: unused
  int64_t value = 0;
};

struct TraceEvent {
  static constexpr size_t kNameBytes = 48;  // including the terminating zero
  static constexpr size_t kMaxArgs = 4;

  char name[kNameBytes] = {};
  const char* category = "";  // a string literal: "train", "kvstore", "server", "scheduler", "collective"
  int64_t start_us = 0;       // the process's steady clock
  int64_t duration_us = 0;
  uint32_t thread = 0;        // the OS thread id
  bool async = false;         // a "b"/"e" pair rather than "X": spans that overlap on one thread
  TraceArg args[kMaxArgs] = {};

  // Copies name, cut to kNameBytes - 1 bytes (never inside a UTF-8 sequence).
  void set_name(std::string_view text);
};

}  // namespace dt::core::timeline
