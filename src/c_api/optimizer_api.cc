// dt_optimizer_*: optimizer descriptions.
#include <vector>

#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "c_api/buffer_out.h"
#include "dt_c_api.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;
using dt::optim::OptimizerConfig;

namespace {

// Applies one setting to a copy and checks it, so a rejected value leaves the
// description as it was. Rules that span keys wait until the description is
// used: a schedule is built one key at a time.
template <typename Value>
void set_checked(dt_optimizer* opt, const char* key, Value value) {
  OptimizerConfig& config = handle(opt, "opt").impl;
  arg(key, "key");
  OptimizerConfig updated = config;
  updated.set(key, std::move(value));
  updated.validate_entries();
  config = std::move(updated);
}

}  // namespace

extern "C" {

dt_status dt_optimizer_create(dt_optimizer** out, const char* name) {
  return guarded(__func__, [&] {
    arg(out, "out");
    arg(name, "name");
    OptimizerConfig config(name);
    config.validate();
    *out = dt::c_api::new_handle<dt_optimizer>(std::move(config));
  });
}

dt_status dt_optimizer_create_from_json(dt_optimizer** out, const char* json) {
  return guarded(__func__, [&] {
    arg(out, "out");
    arg(json, "json");
    OptimizerConfig config = OptimizerConfig::from_json(json);
    config.validate();
    *out = dt::c_api::new_handle<dt_optimizer>(std::move(config));
  });
}

void dt_optimizer_free(dt_optimizer* opt) { dt::c_api::free_handle(opt, __func__); }

dt_status dt_optimizer_set_double(dt_optimizer* opt, const char* key, double value) {
  return guarded(__func__, [&] { set_checked(opt, key, value); });
}

dt_status dt_optimizer_set_int(dt_optimizer* opt, const char* key, int64_t value) {
  return guarded(__func__, [&] { set_checked(opt, key, value); });
}

dt_status dt_optimizer_set_bool(dt_optimizer* opt, const char* key, int32_t value) {
  return guarded(__func__, [&] { set_checked(opt, key, value != 0); });
}

dt_status dt_optimizer_set_string(dt_optimizer* opt, const char* key, const char* value) {
  return guarded(__func__, [&] {
    arg(value, "value");
    set_checked(opt, key, std::string(value));
  });
}

dt_status dt_optimizer_set_int_list(dt_optimizer* opt, const char* key, const int64_t* values, size_t count) {
  return guarded(__func__, [&] {
    if (count > 0) arg(values, "values");
    set_checked(opt, key, std::vector<int64_t>(values, values + count));
  });
}

dt_status dt_optimizer_to_json(char* buf, size_t capacity, size_t* out_length, const dt_optimizer* opt) {
  return guarded(__func__, [&] {
    const std::string text = handle(opt, "opt").impl.to_json();
    dt::c_api::write_string_out(buf, capacity, out_length, text);
  });
}

}  // extern "C"
