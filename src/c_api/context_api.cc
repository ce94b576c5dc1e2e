// dt_context_*: devices.
#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "c_api/options.h"
#include "dt_c_api.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;

namespace {

// dt_memory_stats is filled, never read: every field's default is zero.
void no_defaults(dt_memory_stats*) {}

}  // namespace

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

dt_status dt_memory_stats_init(dt_memory_stats* stats, size_t struct_size) {
  return guarded(__func__, [&] { dt::c_api::init_struct(stats, struct_size, no_defaults, "stats"); });
}

dt_status dt_context_memory_stats(dt_memory_stats* out, const dt_context* ctx) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const dt::core::MemoryStats stats = handle(ctx, "ctx").impl->memory_stats();
    dt_memory_stats full;
    dt::c_api::fill_defaults(&full, no_defaults);
    full.in_use_bytes = stats.in_use_bytes;
    full.peak_bytes = stats.peak_bytes;
    full.cached_bytes = stats.cached_bytes;
    full.allocations = stats.allocations;
    dt::c_api::write_struct(out, full, "out");
  });
}

dt_status dt_context_reset_peak_memory(dt_context* ctx) {
  return guarded(__func__, [&] { handle(ctx, "ctx").impl->reset_peak_memory(); });
}

}  // extern "C"
