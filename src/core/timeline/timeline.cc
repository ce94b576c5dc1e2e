#include "core/timeline/timeline.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "core/parameter_table.h"
#include "core/timeline/event_ring.h"

namespace dt::core::timeline {
namespace {

constexpr size_t kDefaultEvents = 200000;

struct Recorder {
  std::mutex lock;
  // Allocated at the first start() and never freed: record() reads it
  // without the lock.
  std::atomic<EventRing*> ring{nullptr};
  ProcessLabel label;
  bool label_set = false;
  int64_t clock_error_us = 0;  // the bound on label.clock_offset_us's error, once measured
  std::string file;  // DT_TIMELINE, empty when unset
  bool environment_read = false;
};

Recorder& recorder() {
  // Never destroyed: threads may record while the process exits.
  static Recorder* r = new Recorder;
  return *r;
}

size_t capacity_from_environment() {
  const char* text = read_parameter("DT_TIMELINE_EVENTS");
  if (text == nullptr || *text == '\0') return kDefaultEvents;
  char* end = nullptr;
  const long long n = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || n <= 0 || n > (1LL << 28)) {
    log(LogLevel::kWarning, "timeline",
        std::string("DT_TIMELINE_EVENTS=") + text + " is no event count in 1..268435456; keeping " +
            std::to_string(kDefaultEvents));
    return kDefaultEvents;
  }
  return static_cast<size_t>(n);
}

EventRing& ring_locked(Recorder& r) {
  EventRing* ring = r.ring.load(std::memory_order_acquire);
  if (ring == nullptr) {
    ring = new EventRing(capacity_from_environment());
    r.ring.store(ring, std::memory_order_release);
  }
  return *ring;
}

uint32_t this_thread_id() {
  thread_local const uint32_t id = static_cast<uint32_t>(::syscall(SYS_gettid));
  return id;
}

void write_at_exit() { write_process_file(); }

}  // namespace

namespace detail {

int state_from_environment() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.lock);
  if (!r.environment_read) {
    r.environment_read = true;
    const char* layers = read_parameter("DT_TIMELINE_LAYERS");
    detail::layers().store(layers != nullptr && std::string(layers) == "1", std::memory_order_relaxed);
    const char* file = read_parameter("DT_TIMELINE");
    if (file != nullptr && *file != '\0') {
      r.file = file;
      ring_locked(r);
      std::atexit(write_at_exit);
      state().store(1, std::memory_order_relaxed);
    } else {
      state().store(0, std::memory_order_relaxed);
    }
  }
  return state().load(std::memory_order_relaxed);
}

}  // namespace detail

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

void record_event(bool async, const char* category, std::string_view name, int64_t start_us, int64_t end_us,
                  TraceArg a, TraceArg b, TraceArg c, TraceArg d) {
  if (!recording()) return;
  EventRing* ring = recorder().ring.load(std::memory_order_acquire);
  if (ring == nullptr) return;
  TraceEvent event;
  event.set_name(name);
  event.category = category;
  event.start_us = start_us;
  event.duration_us = end_us > start_us ? end_us - start_us : 0;
  event.thread = this_thread_id();
  event.async = async;
  event.args[0] = a;
  event.args[1] = b;
  event.args[2] = c;
  event.args[3] = d;
  ring->push(event);
}

}  // namespace

void record(const char* category, std::string_view name, int64_t start_us, int64_t end_us, TraceArg a, TraceArg b,
            TraceArg c, TraceArg d) {
  record_event(false, category, name, start_us, end_us, a, b, c, d);
}

void record_async(const char* category, std::string_view name, int64_t start_us, int64_t end_us, TraceArg a,
                  TraceArg b, TraceArg c, TraceArg d) {
  record_event(true, category, name, start_us, end_us, a, b, c, d);
}

void start() {
  detail::state_from_environment();
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.lock);
  ring_locked(r);
  detail::state().store(1, std::memory_order_relaxed);
}

void stop() {
  detail::state_from_environment();
  detail::state().store(0, std::memory_order_relaxed);
}

void dump(const std::string& path) {
  if (path.empty()) throw Error(ErrorCode::kInvalidArgument, "a timeline needs a file name to be written to");
  Recorder& r = recorder();
  ProcessLabel label;
  EventRing* ring;
  {
    std::lock_guard<std::mutex> lock(r.lock);
    label = r.label;
    ring = r.ring.load(std::memory_order_acquire);
  }
  const auto events = ring ? ring->snapshot() : std::vector<TraceEvent>{};
  write_text_file(path, trace_json(label, static_cast<int64_t>(::getpid()), events, ring ? ring->dropped() : 0));
}

void set_process(const ProcessLabel& label) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.lock);
  if (r.label_set) return;
  r.label = label;
  r.label_set = true;
}

void offer_clock_offset(int64_t offset_us, int64_t error_us) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.lock);
  if (!r.label_set || r.label.role == "scheduler") return;
  if (r.label.clock_measured && error_us >= r.clock_error_us) return;
  r.label.clock_offset_us = offset_us;
  r.label.clock_measured = true;
  r.clock_error_us = error_us;
}

std::string process_file(const std::string& base, const ProcessLabel& label) {
  if (label.role == "process") return base;
  if (label.rank < 0) return base + "." + label.role + ".json";
  return base + "." + label.role + "." + std::to_string(label.rank) + ".json";
}

void write_process_file() {
  detail::state_from_environment();
  std::string path;
  {
    Recorder& r = recorder();
    std::lock_guard<std::mutex> lock(r.lock);
    if (r.file.empty()) return;
    path = process_file(r.file, r.label);
  }
  try {
    dump(path);
  } catch (const std::exception& e) {
    log(LogLevel::kWarning, "timeline", e.what());
  }
}

}  // namespace dt::core::timeline
