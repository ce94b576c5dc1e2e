// dt_ndarray_save and dt_named_arrays_*: safetensors files.
#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "core/safetensors.h"
#include "dt_c_api.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;
using dt::core::Error;
using dt::core::ErrorCode;

namespace {

const dt::core::SafetensorsContents& contents(const dt_named_arrays* list) { return handle(list, "list").impl; }

size_t checked_index(const dt_named_arrays* list, size_t index) {
  const size_t count = contents(list).arrays.size();
  if (index >= count) {
    throw Error(ErrorCode::kInvalidArgument,
                "index " + std::to_string(index) + " is outside the " + std::to_string(count) + " entries");
  }
  return index;
}

}  // namespace

extern "C" {

dt_status dt_ndarray_save(const char* path, const char* const* names, const dt_ndarray* const* arrays,
                          size_t count) {
  return guarded(__func__, [&] {
    arg(path, "path");
    if (count > 0) {
      arg(names, "names");
      arg(arrays, "arrays");
    }
    dt::core::NamedArrays entries;
    entries.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      const std::string which = "[" + std::to_string(i) + "]";
      arg(names[i], ("names" + which).c_str());
      entries.emplace_back(names[i], handle(arrays[i], ("arrays" + which).c_str()).impl);
    }
    dt::core::save_safetensors(path, entries);
  });
}

dt_status dt_named_arrays_load(dt_named_arrays** out, const dt_context* ctx, const char* path) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& context = handle(ctx, "ctx").impl;
    arg(path, "path");
    *out = dt::c_api::new_handle<dt_named_arrays>(dt::core::load_safetensors(path, context));
  });
}

void dt_named_arrays_free(dt_named_arrays* list) { dt::c_api::free_handle(list, __func__); }

dt_status dt_named_arrays_count(size_t* out, const dt_named_arrays* list) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = contents(list).arrays.size();
  });
}

dt_status dt_named_arrays_name(const char** out, const dt_named_arrays* list, size_t index) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = contents(list).arrays[checked_index(list, index)].first.c_str();
  });
}

dt_status dt_named_arrays_get(dt_ndarray** out, const dt_named_arrays* list, size_t index) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = dt::c_api::new_handle<dt_ndarray>(contents(list).arrays[checked_index(list, index)].second);
  });
}

dt_status dt_named_arrays_find(dt_ndarray** out, const dt_named_arrays* list, const char* name) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& entries = contents(list).arrays;
    arg(name, "name");
    for (const auto& [entry_name, array] : entries) {
      if (entry_name == name) {
        *out = dt::c_api::new_handle<dt_ndarray>(array);
        return;
      }
    }
    throw Error(ErrorCode::kNotFound, std::string("no array named \"") + name + "\"");
  });
}

}  // extern "C"
