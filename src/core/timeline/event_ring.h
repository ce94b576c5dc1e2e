// A fixed-capacity ring of trace events: a process records into it while its
// timeline runs, and writes it out at the end or on dump. When full, a new
// event replaces the oldest one and the loss is counted, so a long job keeps
// its latest steps and the file says how much was left out.
//
// Thread-safe: one mutex around a slot copy (tens of nanoseconds, taken only
// while recording).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/timeline/trace_event.h"

namespace dt::core::timeline {

class EventRing {
 public:
  // capacity: events kept; Error(kInvalidArgument) for 0.
  explicit EventRing(size_t capacity);

  size_t capacity() const { return slots_.size(); }
  void push(const TraceEvent& event);
  // The events kept, oldest first.
  std::vector<TraceEvent> snapshot() const;
  // Events replaced before anyone read them, since construction or clear().
  uint64_t dropped() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<TraceEvent> slots_;
  size_t next_ = 0;   // the slot the next event goes to
  size_t count_ = 0;  // slots holding an event
  uint64_t dropped_ = 0;
};

}  // namespace dt::core::timeline
