// The log channel's C face: dt_log_set_handler over core::set_log_handler.
#include <mutex>
#include <string>

#include "c_api/api_guard.h"
#include "core/log.h"
#include "dt_c_api.h"

using dt::c_api::guarded;
using dt::core::LogLevel;

#define DT_SAME_LEVEL(c, cxx) \
  static_assert(static_cast<int>(c) == static_cast<int>(LogLevel::cxx), #c " differs from core::LogLevel")
DT_SAME_LEVEL(DT_LOG_NONE, kNone);
DT_SAME_LEVEL(DT_LOG_ERROR, kError);
DT_SAME_LEVEL(DT_LOG_WARNING, kWarning);
DT_SAME_LEVEL(DT_LOG_INFO, kInfo);
DT_SAME_LEVEL(DT_LOG_DEBUG, kDebug);
DT_SAME_LEVEL(DT_LOG_TRACE, kTrace);
#undef DT_SAME_LEVEL

namespace {

// The C handler and its user pointer, handed to core as its user pointer:
// core calls handlers with core::LogLevel, C handlers take dt_log_level.
struct CHandler {
  dt_log_handler handler;
  void* user;
};

// The CHandler core holds now. Calls are serialised, so that each frees the
// one it replaced and no other. (Both objects are trivially destructible.)
std::mutex setting;
CHandler* current = nullptr;

void forward(LogLevel level, const char* facility, const char* message, void* user) {
  const CHandler* c = static_cast<const CHandler*>(user);
  c->handler(static_cast<dt_log_level>(level), facility, message, c->user);
}

}  // namespace

extern "C" {

dt_status dt_log_set_handler(dt_log_level max_level, dt_log_handler handler, void* user) {
  return guarded(__func__, [&] {
    const int level = dt::c_api::raw_enum(max_level);
    if (level < DT_LOG_NONE || level > DT_LOG_TRACE) {
      throw dt::core::Error(dt::core::ErrorCode::kInvalidArgument,
                            "max_level " + std::to_string(level) + " is not a dt_log_level (0-5)");
    }
    std::lock_guard<std::mutex> lock(setting);
    CHandler* next = handler == nullptr ? nullptr : new CHandler{handler, user};
    if (next == nullptr) {
      dt::core::set_log_handler(static_cast<LogLevel>(level), nullptr, nullptr);
    } else {
      dt::core::set_log_handler(static_cast<LogLevel>(level), forward, next);
    }
    // core waited for the lines in flight: nothing reads the old one now.
    delete current;
    current = next;
  });
}

}  // extern "C"
