// The process's timeline: spans of what its threads did (a worker's data
// wait, forward, backward, each key part's push and pull; a server's rounds;
// the scheduler's barriers), kept in a ring (event_ring.h) and written as
// Chrome trace-event JSON (trace_writer.h). docs/profiling.md reads one.
//
// Process-wide, as the log channel (core/log.h) and MXNet's profiler are:
// the C API starts, stops and dumps it without a handle
// (dt_profiler_start/stop/dump), and everything a process runs (a trainer,
// its store, the store's connections) lands in one file. Its state lives in
// an object that is never destroyed, so a thread recording while the process
// exits finds it intact.
//
// DT_TIMELINE=FILE starts it at the first span: a job's member writes
// FILE.<role>.<rank>.json (the scheduler FILE.scheduler.json) when its
// membership ends and again at exit; a process outside a job writes FILE at
// exit. dtrun --timeline FILE merges a job's files into FILE.
//
// Cost while off: recording() is one relaxed load and a predictable branch;
// a Span then reads no clock and records nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/timeline/trace_event.h"
#include "core/timeline/trace_writer.h"

namespace dt::core::timeline {

namespace detail {
// -1: DT_TIMELINE not read yet; 0: off; 1: recording. Constant-initialised,
// so reading it needs no guard.
inline std::atomic<int>& state() {
  static std::atomic<int> value{-1};
  return value;
}
int state_from_environment();
// DT_TIMELINE_LAYERS=1: each layer's forward and backward get a span.
inline std::atomic<bool>& layers() {
  static std::atomic<bool> value{false};
  return value;
}
}  // namespace detail

inline bool recording() {
  int s = detail::state().load(std::memory_order_relaxed);
  if (__builtin_expect(s < 0, 0)) s = detail::state_from_environment();
  return s > 0;
}

// The steady clock in microseconds (the same clock in every process of a
// host).
int64_t now_us();

// Records one span of the calling thread; nothing while not recording.
void record(const char* category, std::string_view name, int64_t start_us, int64_t end_us, TraceArg a = {},
            TraceArg b = {}, TraceArg c = {}, TraceArg d = {});

// The same as an async span (TraceEvent::async): one of several that overlap
// on a thread, as a worker's requests in flight do.
void record_async(const char* category, std::string_view name, int64_t start_us, int64_t end_us, TraceArg a = {},
                  TraceArg b = {}, TraceArg c = {}, TraceArg d = {});

// A span from construction to end() or destruction. category and the
// argument names must be string literals; name must outlive the span (null:
// the span records nothing).
class Span {
 public:
  Span(const char* category, const char* name, TraceArg a = {}, TraceArg b = {}, TraceArg c = {}, TraceArg d = {})
      : start_us_(name != nullptr && recording() ? now_us() : -1),
        category_(category),
        name_(name),
        args_{a, b, c, d} {}
  ~Span() { end(); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  // An argument known only after the span began (slot 0-3).
  void set_arg(size_t slot, TraceArg arg) { args_[slot] = arg; }
  // Records the span now; later calls do nothing.
  void end() {
    if (start_us_ < 0) return;
    record(category_, name_, start_us_, now_us(), args_[0], args_[1], args_[2], args_[3]);
    start_us_ = -1;
  }

 private:
  int64_t start_us_;  // -1: not recording, or ended
  const char* category_;
  const char* name_;
  TraceArg args_[TraceEvent::kMaxArgs];
};

// A span named after a layer, recorded only when DT_TIMELINE_LAYERS=1 (a
// step's forward and backward are spans of their own either way).
inline Span layer_span(const char* category, const std::string& layer) {
  const bool wanted = recording() && detail::layers().load(std::memory_order_relaxed);
  return Span(category, wanted ? layer.c_str() : nullptr);
}

// dt_profiler_start / stop: recording on or off (what was recorded stays).
// start() allocates the ring at its first call (DT_TIMELINE_EVENTS events).
void start();
void stop();
// Writes what the ring holds now to path (Error(kIo) when it cannot).
void dump(const std::string& path);

// A job's member says who this process is once the scheduler gave it its
// rank, with its clock's offset to the scheduler's (clock_offset.h). The
// first member of a process names it (tests run several in one).
void set_process(const ProcessLabel& label);
// One more estimate of the clock offset (clock_offset.h), good to within
// error_us: it replaces the one in force when that was less precise.
void offer_clock_offset(int64_t offset_us, int64_t error_us);
// DT_TIMELINE set: writes this process's file now (see above); errors go
// to the log channel, never to the caller (a job's end must not fail over
// its timeline).
void write_process_file();
// The file a process labelled label writes for DT_TIMELINE=base.
std::string process_file(const std::string& base, const ProcessLabel& label);

}  // namespace dt::core::timeline
