// The buffer protocol of every dt_*_to_json call: report the bytes needed
// (with the NUL), and copy only when the caller's buffer holds them.
#pragma once

#include <cstring>
#include <string>

#include "c_api/handles.h"

namespace dt::c_api {

inline void write_string_out(char* buf, size_t capacity, size_t* out_length, const std::string& text) {
  arg(out_length, "out_length");
  const size_t needed = text.size() + 1;
  if (buf != nullptr) {
    if (capacity < needed) {
      throw core::Error(core::ErrorCode::kInvalidArgument, "buffer of " + std::to_string(capacity) +
                                                               " bytes is too small; " + std::to_string(needed) +
                                                               " needed");
    }
    std::memcpy(buf, text.c_str(), needed);
  } else if (capacity != 0) {
    throw core::Error(core::ErrorCode::kInvalidArgument, "buf is NULL but capacity is not 0");
  }
  *out_length = needed;
}

}  // namespace dt::c_api
