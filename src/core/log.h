// The library's one log channel. Every line the library writes goes through
// log(); nothing below src/c_api writes to stderr itself. A host program (a
// JVM service, a Go server) takes the lines with dt_log_set_handler(); without
// a handler they go to stderr in the style the library has always printed:
// "disttrain <facility>: <message>" (a warning's message after "warning: ",
// an error's after "error: "), and debug and trace lines as ps-lite's
// PS_VERBOSE lines were, "disttrain[PS_VERBOSE]: <facility>: <message>", so
// that scripts and tests that read a job's output keep working.
//
// Levels as in nng and NCCL: errors, warnings, information a user wants to
// see (a worker joined, a server was lost), debugging detail (connections,
// node tables) and traces (every message, every slice). DT_LOG_LEVEL sets the
// level, by name or number; PS_VERBOSE=1 raises it to debug and 2 to trace,
// as ps-lite's PS_VERBOSE does.
//
// The handler and the level are process-wide, as a logger is in nng
// (nng_log_set_logger): they are the one piece of state a host program sets
// for the whole library. They live in objects that are never destroyed, so a
// thread that logs while the process exits finds them intact.
#pragma once

#include <string>

namespace dt::core {

// Same values as dt_log_level in dt_c_api.h (checked in src/c_api).
enum class LogLevel : int {
  kNone = 0,
  kError = 1,
  kWarning = 2,
  kInfo = 3,
  kDebug = 4,  // PS_VERBOSE=1: connections, node tables
  kTrace = 5,  // PS_VERBOSE=2: every message, every slice
};

// facility: the part of the library speaking, with its rank where it has
// one ("scheduler", "server 1", "worker 0", "allreduce", "trainer", "job").
using LogHandler = void (*)(LogLevel level, const char* facility, const char* message, void* user);

// True when a line of this level would be written: callers that build an
// expensive message test this first.
bool log_enabled(LogLevel level);

// Writes one line (no trailing newline in message). Thread-safe; a line is
// one write, never interleaved with another.
void log(LogLevel level, const std::string& facility, const std::string& message);

// printf-style convenience for the same.
void logf(LogLevel level, const std::string& facility, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// Sets the process-wide handler (null: back to stderr) and the most verbose
// level passed on. user is handed back to every call of handler. A handler
// may be called from any thread; calls never overlap (one line at a time),
// and it must not call into the library. set_log_handler waits for the call
// in flight, so after it returns the old handler is never called again.
void set_log_handler(LogLevel max_level, LogHandler handler, void* user);

// The level in force: the one set_log_handler() gave, else DT_LOG_LEVEL /
// PS_VERBOSE from the environment (read once), else kInfo. A DT_LOG_LEVEL
// that is no level is reported once (a warning on stderr) and logs at kInfo.
LogLevel log_level();

// "none", "error", "warning", "info", "debug", "trace".
const char* log_level_name(LogLevel level);

// Parses DT_LOG_LEVEL's text: a name above or its number. Throws
// Error(kInvalidArgument) naming the variable otherwise.
LogLevel parse_log_level(const std::string& text);

}  // namespace dt::core
