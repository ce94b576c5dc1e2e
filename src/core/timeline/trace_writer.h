// Chrome's trace-event JSON for one process's events, the format Perfetto
// (ui.perfetto.dev) and chrome://tracing open:
//   {"traceEvents":[{"name":..,"cat":..,"ph":"X","ts":us,"dur":us,"pid":..,"tid":..,"args":{..}}, ...
//                   {"name":..,"ph":"b","ts":us,"pid":..,"tid":..,"id":N,"args":{..}}, {.."ph":"e"..}, ...
//                   {"ph":"M","name":"process_name","args":{"name":"worker 0"}}, ...],
//    "displayTimeUnit":"ms",
//    "otherData":{"role":"worker","rank":0,"clock_offset_us":..,"dropped_events":..}}
// Timestamps are the process's own steady clock in microseconds;
// otherData.clock_offset_us is what to add to bring them onto the
// scheduler's clock (dtrun's merge does, tools/dtrun/timeline_merge.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/timeline/trace_event.h"

namespace dt::core::timeline {

// Who wrote a timeline: a job's member after registration, else the process
// alone (role "process", rank -1).
struct ProcessLabel {
  std::string role = "process";  // "worker", "server", "scheduler", "process"
  int rank = -1;
  int64_t clock_offset_us = 0;  // local steady clock + this = the scheduler's
  bool clock_measured = false;  // whether the offset was measured (else 0)
  // "worker 0", "server 1", "scheduler", "process 4242".
  std::string name(int64_t pid) const;
};

// text as the body of a JSON string: quotes, backslashes and control
// characters escaped; bytes that are not valid UTF-8 become U+FFFD, so the
// document always parses.
std::string json_escape(std::string_view text);

std::string trace_json(const ProcessLabel& label, int64_t pid, const std::vector<TraceEvent>& events,
                       uint64_t dropped);

// Writes text to path through a temporary file renamed into place, so a
// reader never sees half a file. Error(kIo) naming the path.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace dt::core::timeline
