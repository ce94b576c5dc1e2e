#include "core/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "core/parameter_table.h"

namespace dt::core {
namespace {

// -1 until the environment was read or a handler set a level.
std::atomic<int>& level_slot() {
  static std::atomic<int> level{-1};
  return level;
}

// The handler and its user pointer change together under the lock, and a
// handler is called under it: calls never overlap, and set_log_handler
// waits for the one in flight.
struct HandlerSlot {
  std::mutex lock;
  LogHandler handler = nullptr;
  void* user = nullptr;
};

HandlerSlot& handler_slot() {
  // Never destroyed: threads of a host program may log while it exits.
  static HandlerSlot* slot = new HandlerSlot;
  return *slot;
}

void write_to_stderr(LogLevel level, const std::string& facility, const std::string& message) {
  std::string line;
  if (level >= LogLevel::kDebug) {
    // ps-lite's PS_VERBOSE form, which job scripts and tests read.
    line = "disttrain[PS_VERBOSE]: ";
    if (!facility.empty()) line += facility + ": ";
  } else {
    line = "disttrain";
    if (!facility.empty()) line += " " + facility;
    line += ": ";
  }
  if (level == LogLevel::kWarning) line += "warning: ";
  if (level == LogLevel::kError) line += "error: ";
  line += message;
  line += '\n';
  // One write per line, so lines of several threads never interleave.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

LogLevel level_from_environment() {
  LogLevel level = LogLevel::kInfo;
  const char* text = read_parameter("DT_LOG_LEVEL");
  if (text != nullptr && *text != '\0') {
    try {
      level = parse_log_level(text);
    } catch (const Error& e) {
      write_to_stderr(LogLevel::kWarning, "", std::string(e.what()) + "; logging at level info");
    }
  }
  // PS_VERBOSE only ever raises the level, as in ps-lite where it adds detail.
  const char* verbose = read_parameter("PS_VERBOSE");
  if (verbose != nullptr && *verbose != '\0') {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(verbose, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0) {
      // The nodes that validate their options refuse it; others log at 0.
      write_to_stderr(LogLevel::kWarning, "",
                      std::string("PS_VERBOSE=\"") + verbose + "\" is not a log level (0, 1 or 2); logging as level 0");
    } else if (v >= 2 && level < LogLevel::kTrace) {
      level = LogLevel::kTrace;
    } else if (v == 1 && level < LogLevel::kDebug) {
      level = LogLevel::kDebug;
    }
  }
  return level;
}

}  // namespace

LogLevel log_level() {
  int level = level_slot().load(std::memory_order_relaxed);
  if (level < 0) {
    const int from_environment = static_cast<int>(level_from_environment());
    int expected = -1;
    level_slot().compare_exchange_strong(expected, from_environment);
    level = level_slot().load(std::memory_order_relaxed);
  }
  return static_cast<LogLevel>(level);
}

bool log_enabled(LogLevel level) {
  return level != LogLevel::kNone && static_cast<int>(level) <= static_cast<int>(log_level());
}

void log(LogLevel level, const std::string& facility, const std::string& message) {
  if (!log_enabled(level)) return;
  HandlerSlot& slot = handler_slot();
  std::unique_lock<std::mutex> calling(slot.lock);
  if (slot.handler != nullptr) {
    slot.handler(level, facility.c_str(), message.c_str(), slot.user);
    return;
  }
  calling.unlock();
  write_to_stderr(level, facility, message);
}

void logf(LogLevel level, const std::string& facility, const char* format, ...) {
  if (!log_enabled(level)) return;
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string message;
  if (size > 0) {
    std::vector<char> text(static_cast<size_t>(size) + 1);
    std::vsnprintf(text.data(), text.size(), format, again);
    message.assign(text.data(), static_cast<size_t>(size));
  }
  va_end(again);
  log(level, facility, message);
}

void set_log_handler(LogLevel max_level, LogHandler handler, void* user) {
  HandlerSlot& slot = handler_slot();
  std::lock_guard<std::mutex> setting(slot.lock);
  slot.handler = handler;
  slot.user = user;
  level_slot().store(static_cast<int>(max_level), std::memory_order_relaxed);
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kNone: return "none";
    case LogLevel::kError: return "error";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
    case LogLevel::kTrace: return "trace";
  }
  return "unknown";
}

LogLevel parse_log_level(const std::string& text) {
  for (int v = static_cast<int>(LogLevel::kNone); v <= static_cast<int>(LogLevel::kTrace); ++v) {
    const auto level = static_cast<LogLevel>(v);
    if (text == log_level_name(level) || text == std::to_string(v)) return level;
  }
  if (text == "warn") return LogLevel::kWarning;
  throw Error(ErrorCode::kInvalidArgument, "DT_LOG_LEVEL=\"" + text +
                                               "\" is not a log level (none, error, warning, info, debug, trace or 0-5)");
}

}  // namespace dt::core
