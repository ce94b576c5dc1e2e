// dt_context_*: devices.
#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "dt_c_api.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;

extern "C" {

dt_status dt_context_create(dt_context** out, dt_device_type type, int32_t device_id) {
  return guarded(__func__, [&] {
    arg(out, "out");
    auto ctx = dt::core::make_context(dt::c_api::raw_enum(type), device_id);
    *out = dt::c_api::new_handle<dt_context>(std::move(ctx));
  });
}

void dt_context_free(dt_context* ctx) { dt::c_api::free_handle(ctx, __func__); }

dt_status dt_context_device_type(dt_device_type* out, const dt_context* ctx) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = static_cast<dt_device_type>(handle(ctx, "ctx").impl->type());
  });
}

dt_status dt_context_device_id(int32_t* out, const dt_context* ctx) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(ctx, "ctx").impl->device_id();
  });
}

}  // extern "C"
