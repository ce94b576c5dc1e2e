// The timeline's C face (dt_profiler_*) over core/timeline/timeline.h.
#include "c_api/api_guard.h"
#include "core/error.h"
#include "core/timeline/timeline.h"
#include "dt_c_api.h"

using dt::c_api::guarded;

extern "C" {

dt_status dt_profiler_start(void) {
  return guarded(__func__, [] { dt::core::timeline::start(); });
}

dt_status dt_profiler_stop(void) {
  return guarded(__func__, [] { dt::core::timeline::stop(); });
}

dt_status dt_profiler_dump(const char* path) {
  return guarded(__func__, [&] {
    if (path == nullptr || *path == '\0') {
      throw dt::core::Error(dt::core::ErrorCode::kInvalidArgument, "path is NULL or empty");
    }
    dt::core::timeline::dump(path);
  });
}

}  // extern "C"
