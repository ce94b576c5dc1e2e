// The wrapper every extern "C" body runs in: no exception crosses the C
// boundary; each becomes a dt_status and a message in the thread's last error.
#pragma once

#include <cstring>
#include <new>
#include <string>

#include "core/error.h"
#include "dt_c_api.h"

namespace dt::c_api {

// Sets the calling thread's dt_last_error() text.
void set_last_error(const std::string& message);
const char* last_error();

dt_status status_of(core::ErrorCode code);

// The int a C caller passed for an enum parameter. C lets any int through,
// but in C++ reading an enum object outside its declared range is undefined
// behaviour, so the shims read the bytes rather than the enum.
template <typename Enum>
int raw_enum(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
  int raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

// Runs body; maps dt::core::Error to its status, std::bad_alloc to out of
// memory, anything else to internal. Messages start with the function name.
template <typename Body>
dt_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return DT_OK;
  } catch (const core::Error& e) {
    set_last_error(std::string(function) + ": " + e.what());
    return status_of(e.code());
  } catch (const std::bad_alloc&) {
    set_last_error(std::string(function) + ": out of memory");
    return DT_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(std::string(function) + ": internal error: " + e.what());
    return DT_ERR_INTERNAL;
  } catch (...) {
    set_last_error(std::string(function) + ": internal error: unknown exception");
    return DT_ERR_INTERNAL;
  }
}

}  // namespace dt::c_api
